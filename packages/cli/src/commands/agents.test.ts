import { ensureBucket } from "@geode/bus";
import { AgentRecordSchema, sha256 } from "@geode/contracts";
import { useTestEnv } from "@geode/testing";
import { describe, expect, it } from "vitest";
import { runCliCaptured } from "../capture-io.js";

const env = useTestEnv();
const geode = (...argv: string[]) => runCliCaptured(argv, { ...process.env, ...env().env });

describe("geode agents", () => {
  it("add prints the token once, alone on the last line, and keeps only its SHA-256", async () => {
    const added = await geode("agents", "add", "laptop");
    expect(added.code).toBe(0);
    const lines = added.out.trimEnd().split("\n");
    const token = lines.at(-1) as string;
    expect(token).toMatch(/^geode_agent_[A-Za-z0-9_-]{43}$/);
    expect(lines.slice(0, -1).join("\n")).not.toContain(token);
    const kv = await ensureBucket(env().nc, env().names, "agents");
    const raw = (await kv.get("laptop"))?.string() ?? "";
    expect(raw).not.toContain(token);
    expect(AgentRecordSchema.parse(JSON.parse(raw))).toMatchObject({
      name: "laptop",
      token_sha256: sha256(token),
    });

    const again = await geode("agents", "add", "laptop");
    expect(again.code).toBe(1);
    expect(again.err).toMatch(/already exists/);
    expect((await kv.get("laptop"))?.string()).toBe(raw);
  });

  it("ls lists names and creation times, never digests; rm removes", async () => {
    await geode("agents", "add", "ci-runner");
    const ls = await geode("agents", "ls");
    expect(ls.code).toBe(0);
    expect(ls.out).toMatch(
      /^name\s+created\s+groups\s+kinds\s+last seen\s+sessions\s+hook calls\s+blocks\s+last check\s+guarded hooks seen$/m,
    );
    // No group, no session yet: no kind, never seen, nothing counted, never checked, no guard seen.
    expect(ls.out).toMatch(/^ci-runner\s+\d{4}-\d\d-\d\dT\S+\s+-\s+-\s+-\s+0\s+0\s+0\s+never\s+none$/m);
    expect(ls.out).not.toMatch(/[0-9a-f]{64}/);
    const json = JSON.parse((await geode("agents", "ls", "--json")).out) as Array<{ name: string }>;
    expect(json.map((a) => a.name)).toContain("ci-runner");

    expect((await geode("agents", "rm", "ci-runner")).code).toBe(0);
    expect((await geode("agents", "ls")).out).not.toContain("ci-runner");
    const missing = await geode("agents", "rm", "ci-runner");
    expect(missing.code).toBe(1);
    expect(missing.err).toMatch(/no agent ci-runner/);
  });

  it("add --group stores the agent's groups, which ls shows", async () => {
    const added = await geode("agents", "add", "contractor-1", "--group", "contractors", "--group", "eu");
    expect(added.code).toBe(0);
    const kv = await ensureBucket(env().nc, env().names, "agents");
    const record = AgentRecordSchema.parse(JSON.parse((await kv.get("contractor-1"))?.string() ?? ""));
    expect(record.groups).toEqual(["contractors", "eu"]);
    expect((await geode("agents", "ls")).out).toMatch(/^contractor-1\s+\S+\s+contractors, eu\s+-/m);
    const json = JSON.parse((await geode("agents", "ls", "--json")).out) as Array<{
      name: string;
      groups: string[];
    }>;
    expect(json.find((a) => a.name === "contractor-1")?.groups).toEqual(["contractors", "eu"]);
    const bad = await geode("agents", "add", "x1", "--group", "Bad Group");
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/group names match/);
  });

  it("refuses names outside [a-z0-9][a-z0-9_-]{0,63}", async () => {
    for (const bad of ["Laptop", "_x", "a.b", "x".repeat(65)]) {
      const r = await geode("agents", "add", bad);
      expect(r.code, bad).toBe(2);
      expect(r.err).toMatch(/agent names match/);
    }
  });
});
