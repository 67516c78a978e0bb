/**
 * `geode mcp add|ls|tools|rm` (DESIGN section 19) run as users run them: the compiled `geode`
 * against a real NATS, the records read back from KV `{ns}_mcp_servers` as the mcp-bridge reads
 * them, the registered tools written to `{ns}_tools` as the bridge writes them.
 */
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { ensureBucket } from "@geode/bus";
import { type HealthReply, McpServerRecordSchema, type ToolDefinition } from "@geode/contracts";
import { spawnService, useTestEnv, waitFor } from "@geode/testing";
import { describe, expect, it } from "vitest";
import { geodeProcess } from "./agent-process-support.js";

const env = useTestEnv();

/** Runs `geode <args>` to its end, as the operator ops-alice. */
const geode = (args: string[]) =>
  geodeProcess(args, { env: { ...process.env, ...env().env, GEODE_OPERATOR: "ops-alice" } });

async function stored(name: string): Promise<unknown> {
  const kv = await ensureBucket(env().nc, env().names, "mcpServers");
  const entry = await kv.get(name);
  return entry?.operation === "PUT" ? entry.json() : null;
}

describe("geode mcp add", () => {
  it("writes a stdio record the bridge can read, with its options and who wrote it", async () => {
    const r = await geode([
      "mcp",
      "add",
      "fs",
      "--tools",
      "read_*",
      "--tools",
      "list_*",
      "--effect",
      "write_*=mutation",
      "--approve",
      "write_*",
      "--group",
      "devs",
      "--env",
      "HOME",
      "--",
      "npx",
      "-y",
      "@modelcontextprotocol/server-filesystem",
      "/srv/docs",
    ]);
    expect(r.err).toBe("");
    expect(r.code).toBe(0);
    expect(r.out).toContain("MCP server fs added");
    const record = McpServerRecordSchema.parse(await stored("fs"));
    expect(record).toMatchObject({
      name: "fs",
      transport: "stdio",
      command: "npx",
      args: ["-y", "@modelcontextprotocol/server-filesystem", "/srv/docs"],
      env: ["HOME"],
      tools: ["read_*", "list_*"],
      effects: { "write_*": "mutation" },
      approve: ["write_*"],
      groups: ["devs"],
      updated_by: "ops-alice",
    });
    expect(Date.now() - record.created_at).toBeLessThan(600_000);
  });

  it("writes an http record whose header names a variable", async () => {
    const r = await geode([
      "mcp",
      "add",
      "gh",
      "--url",
      "https://mcp.example.com/mcp",
      "--header",
      "Authorization=$GH_TOKEN",
    ]);
    expect(r.code).toBe(0);
    expect(McpServerRecordSchema.parse(await stored("gh"))).toMatchObject({
      transport: "http",
      url: "https://mcp.example.com/mcp",
      headers: { Authorization: "$GH_TOKEN" },
    });
  });

  it("refuses a bad record with the field named, exit 2, and writes nothing", async () => {
    const cases: Array<[string[], RegExp]> = [
      [["mcp", "add", "Bad-Name", "--", "true"], /MCP server names match/],
      [["mcp", "add", "nocmd"], /command: a stdio server needs a command/],
      [
        ["mcp", "add", "nourl", "--header", "Authorization=$TOKEN"],
        /url: an http server needs an http\(s\) url/,
      ],
      [
        ["mcp", "add", "ftp", "--url", "ftp://files.example.com"],
        /url: an http server needs an http\(s\) url/,
      ],
      [
        ["mcp", "add", "both", "--url", "https://a.example", "--", "true"],
        /command: an http server has no command/,
      ],
      [["mcp", "add", "eff", "--effect", "x=sometimes", "--", "true"], /effects\.x: /],
    ];
    for (const [args, message] of cases) {
      const r = await geode(args);
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.err).toMatch(message);
      expect(r.err).toContain("Usage: geode mcp add");
      expect(r.out).toBe("");
    }
    for (const name of ["nocmd", "nourl", "ftp", "both", "eff"]) expect(await stored(name)).toBeNull();
  });

  it("refuses a literal header value without echoing it", async () => {
    const secret = "ghp_0123456789abcdefSECRET";
    const r = await geode([
      "mcp",
      "add",
      "leak",
      "--url",
      "https://mcp.example.com/mcp",
      "--header",
      `Authorization=Bearer ${secret}`,
    ]);
    expect(r.code).toBe(2);
    expect(r.err).toContain("headers.Authorization");
    expect(r.err).toContain("$VARIABLE");
    expect(r.err + r.out).not.toContain(secret);
    expect(await stored("leak")).toBeNull();
  });
});

describe("geode mcp ls", () => {
  it("shows each record's transport and target; without a bridge the state is unknown and said so", async () => {
    const r = await geode(["mcp", "ls"]);
    expect(r.code).toBe(0);
    const line = (name: string) => r.out.split("\n").find((l) => l.startsWith(`${name} `)) ?? "";
    expect(line("fs")).toMatch(
      /stdio\s+npx -y @modelcontextprotocol\/server-filesystem \/srv\/docs\s+unknown/,
    );
    expect(line("gh")).toMatch(/http\s+https:\/\/mcp\.example\.com\/mcp\s+unknown/);
    expect(r.out).toContain("the mcp-bridge is not running");

    const json = await geode(["mcp", "ls", "--json"]);
    expect(json.code).toBe(0);
    const rows = JSON.parse(json.out) as Array<Record<string, unknown>>;
    expect(rows.map((x) => [x["name"], x["transport"], x["state"]])).toEqual([
      ["fs", "stdio", "unknown"],
      ["gh", "http", "unknown"],
    ]);
    expect(json.err).toContain("the mcp-bridge is not running");
  });
  it("shows the state, tools and last error the bridge's health reply gives (served here, as the bridge would)", async () => {
    const now = Date.now();
    const reply: HealthReply = {
      service: "mcp-bridge",
      status: "degraded",
      version: "0.1.0",
      started_at: now,
      reason: "1 of 2 MCP servers failing",
      metrics_url: null,
      servers: [
        {
          name: "fs",
          transport: "stdio",
          state: "connected",
          tools: 14,
          protocol_version: "2025-11-25",
          last_error: null,
          attempts: 0,
          since: now,
        },
        {
          name: "gh",
          transport: "http",
          state: "failed",
          tools: 0,
          protocol_version: null,
          last_error: "401 Unauthorized",
          attempts: 3,
          since: now,
        },
      ],
    };
    const sub = env().nc.subscribe(env().names.health("mcp-bridge"), {
      callback: (_e, m) => {
        m.respond(JSON.stringify(reply));
      },
    });
    // The subscription reaches the server before the CLI asks.
    await env().nc.flush();
    try {
      const r = await geode(["mcp", "ls"]);
      expect(r.code).toBe(0);
      const line = (name: string) => r.out.split("\n").find((l) => l.startsWith(`${name} `)) ?? "";
      expect(line("fs")).toMatch(/connected\s+14\s+devs\s+-$/);
      expect(line("gh")).toMatch(/failed\s+0\s+all\s+401 Unauthorized$/);
      expect(r.out).not.toContain("not running");
      const rows = JSON.parse((await geode(["mcp", "ls", "--json"])).out) as Array<Record<string, unknown>>;
      expect(rows[1]).toMatchObject({
        name: "gh",
        state: "failed",
        last_error: "401 Unauthorized",
        attempts: 3,
      });
    } finally {
      sub.unsubscribe();
    }
  });
});

describe("geode mcp tools", () => {
  it("lists the registered MCP tools of all servers or one, not other remote tools", async () => {
    const kv = await ensureBucket(env().nc, env().names, "tools");
    const tool = (name: string, extra: Partial<ToolDefinition>): ToolDefinition => ({
      name,
      description: name,
      input_schema: { type: "object" },
      effect: "read",
      requires_approval: false,
      ...extra,
    });
    for (const def of [
      tool("fs_read_text_file", {
        mcp: { server: "fs", tool: "read_text_file", annotations: { readOnlyHint: true } },
      }),
      tool("fs_write_file", {
        effect: "mutation",
        requires_approval: true,
        mcp: { server: "fs", tool: "write_file", annotations: { destructiveHint: true } },
      }),
      tool("gh_create_issue", {
        effect: "communication",
        mcp: { server: "gh", tool: "create_issue", annotations: { openWorldHint: true } },
      }),
      tool("mail.send", { effect: "communication" }),
    ])
      await kv.put(def.name, JSON.stringify(def));

    const all = await geode(["mcp", "tools"]);
    expect(all.code).toBe(0);
    const line = (name: string) => all.out.split("\n").find((l) => l.startsWith(`${name} `)) ?? "";
    expect(line("fs_read_text_file")).toMatch(/fs\s+read_text_file\s+read\s+-\s+read-only/);
    expect(line("fs_write_file")).toMatch(/fs\s+write_file\s+mutation\s+required\s+destructive/);
    expect(line("gh_create_issue")).toMatch(/gh\s+create_issue\s+communication\s+-\s+open-world/);
    expect(all.out).not.toContain("mail.send");

    const one = await geode(["mcp", "tools", "fs", "--json"]);
    expect(one.code).toBe(0);
    expect(JSON.parse(one.out)).toEqual([
      expect.objectContaining({
        name: "fs_read_text_file",
        server: "fs",
        tool: "read_text_file",
        effect: "read",
      }),
      expect.objectContaining({ name: "fs_write_file", tool: "write_file", requires_approval: true }),
    ]);
  });
});

describe("geode mcp rm", () => {
  it("deletes a record; an unknown name is a clear error, exit 1", async () => {
    const r = await geode(["mcp", "rm", "gh"]);
    expect(r.code).toBe(0);
    expect(r.out).toContain("removed MCP server gh");
    expect(await stored("gh")).toBeNull();
    const again = await geode(["mcp", "rm", "gh"]);
    expect(again.code).toBe(1);
    expect(again.err).toContain("no MCP server gh");
    const ls = await geode(["mcp", "ls", "--json"]);
    expect((JSON.parse(ls.out) as Array<{ name: string }>).map((x) => x.name)).toEqual(["fs"]);
  });
});

/** Pids of running processes whose command line holds `text`. */
function pidsWith(text: string): number[] {
  return readdirSync("/proc")
    .filter((e) => /^\d+$/.test(e))
    .filter((e) => {
      try {
        const stat = readFileSync(`/proc/${e}/stat`, "utf8");
        return readFileSync(`/proc/${e}/cmdline`, "utf8").includes(text) && stat.split(") ")[1]?.[0] !== "Z";
      } catch {
        return false;
      }
    })
    .map(Number);
}

describe("with a running mcp-bridge", () => {
  it("geode mcp ls shows its live state and geode mcp tools the upstream's real tools", async () => {
    const manifest = createRequire(import.meta.url).resolve(
      "@modelcontextprotocol/server-filesystem/package.json",
    );
    const bin = path.join(path.dirname(manifest), "dist/index.js");
    const root = mkdtempSync(path.join(os.tmpdir(), "geode-mcp-cli-"));
    // Replaces the record above: the bridge starts server-filesystem on a temporary root.
    const added = await geode([
      "mcp",
      "add",
      "fs",
      "--approve",
      "write_*",
      "--",
      process.execPath,
      bin,
      root,
    ]);
    expect(added.code, added.err).toBe(0);
    expect(added.out).toContain("MCP server fs replaced");
    const bridge = spawnService("services/mcp-bridge/src/main.ts", { ...env().env, LOG_LEVEL: "info" });
    try {
      await bridge.waitForOutput(/mcp-bridge started/, 30_000);
      const ls = await waitFor(async () => {
        const r = await geode(["mcp", "ls"]);
        return /connected/.test(r.out) ? r : null;
      }, 30_000);
      expect(ls?.code).toBe(0);
      const line = ls?.out.split("\n").find((l) => l.startsWith("fs ")) ?? "";
      // The target is cut to fit the column; the bridge's state follows it.
      expect(line).toMatch(/^fs\s+stdio\s+\S+ .*\s+connected\s+14\s+all\s+-$/);
      expect(ls?.out).not.toContain("not running");
      const rows = JSON.parse((await geode(["mcp", "ls", "--json"])).out) as Array<Record<string, unknown>>;
      expect(rows).toEqual([
        expect.objectContaining({
          name: "fs",
          state: "connected",
          tools_registered: 14,
          protocol_version: "2025-11-25",
          last_error: null,
        }),
      ]);

      const tools = await geode(["mcp", "tools", "fs", "--json"]);
      expect(tools.code).toBe(0);
      const listed = JSON.parse(tools.out) as Array<Record<string, unknown>>;
      expect(listed).toHaveLength(14);
      expect(listed).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ name: "fs_read_text_file", tool: "read_text_file", effect: "read" }),
          expect.objectContaining({
            name: "fs_write_file",
            effect: "mutation",
            requires_approval: true,
          }),
        ]),
      );
      // The definitions written above by hand (a server since removed, a tool fs does not have) are gone.
      const all = await geode(["mcp", "tools"]);
      expect(all.out).not.toContain("gh_create_issue");
      expect(all.out).toContain("fs_list_allowed_directories");
      expect(pidsWith(root)).toHaveLength(1);
    } finally {
      await bridge.stop();
    }
    // Stopped, it leaves no upstream server running.
    await waitFor(() => pidsWith(root).length === 0);
  });
});
