import { guardedArguments, type McpToolOrigin } from "@geode/contracts";
import { describe, expect, it } from "vitest";
import { PolicyEngine } from "./policy-engine.js";
import { packText, schemaText } from "./policy-files.js";
import { type CallerIdentity, cedarRequests, registeredToolApplies } from "./policy-request.js";
import { checkPolicySet } from "./policy-set.js";

const caller = { agent: "dev", agentKind: "claude-code", groups: [] } as const;
const padded = (tail: string) => `echo ${"a".repeat(6_000)} && ${tail}`;

describe("MCP tools in Cedar requests", () => {
  it("are of kind mcp with their server, tool and the MCP defaults of annotations", () => {
    const [request] = cedarRequests(
      "PreToolUse",
      { tool_name: "mcp__filesystem__read_text_file", arguments: { path: "/x/.env" } },
      "s",
      caller,
    );
    expect(request?.entities.at(-1)?.attrs).toEqual({ kind: "mcp" });
    expect(request?.context).toMatchObject({
      mcp_server: "filesystem",
      mcp_tool: "read_text_file",
      read_only: false,
      destructive: true,
      open_world: true,
      paths: ["/x/.env"],
      path: "/x/.env",
    });
  });

  it("gives no MCP attributes to a tool that is not one, whatever its payload claims", () => {
    const [request] = cedarRequests(
      "PreToolUse",
      {
        tool_name: "Bash",
        arguments: { command: "ls" },
        mcp: { server: "fs", tool: "read_text_file", annotations: { readOnlyHint: true } },
        mcp_server: "fs",
        read_only: true,
      },
      "s",
      caller,
    );
    expect(request?.entities.at(-1)?.attrs).toEqual({ kind: "shell" });
    for (const k of ["mcp_server", "mcp_tool", "read_only", "destructive", "open_world"])
      expect(request?.context[k]).toBeUndefined();
  });

  it("validates policies that use the MCP attributes against the schema", () => {
    const text = `forbid (principal, action == Geode::Action::"call_tool", resource)
when { resource.kind == "mcp" && context has mcp_server && context.mcp_server == "fs" &&
  context has mcp_tool && context.mcp_tool like "write*" && context has open_world && context.open_world &&
  context has read_only && !context.read_only && context has destructive && context.destructive };`;
    expect(() => checkPolicySet("mcp-test", text, "enforce", schemaText())).not.toThrow();
    expect(() =>
      checkPolicySet(
        "bad",
        `permit (principal, action, resource) when { context.mcp_nope == 1 };`,
        "enforce",
        schemaText(),
      ),
    ).toThrow();
  });

  it("secrets-read refuses an MCP read_text_file of /x/.env; mcp-safety asks for write_file", () => {
    const engine = new PolicyEngine([
      checkPolicySet("secrets-read", packText("secrets-read") ?? "", "enforce", schemaText()),
      checkPolicySet("mcp-safety", packText("mcp-safety") ?? "", "enforce", schemaText()),
    ]);
    const read = engine.evaluate(
      "PreToolUse",
      { tool_name: "mcp__filesystem__read_text_file", arguments: { path: "/x/.env" } },
      "s",
      caller,
    );
    expect(read.enforce.action).toBe("block");
    const write = engine.evaluate(
      "PreToolUse",
      { tool_name: "mcp__filesystem__write_file", arguments: { path: "/x/a.md", content: "" } },
      "s",
      caller,
    );
    expect(write.enforce.action).toBe("request_permission");
  });

  it("sees a command hidden after padding in an MCP argument through the guarded facts", () => {
    const engine = new PolicyEngine([
      checkPolicySet("destructive-shell", packText("destructive-shell") ?? "", "enforce", schemaText()),
    ]);
    const command = padded("rm -rf /");
    const guarded = guardedArguments("mcp__shell__run", { command }).arguments;
    const result = engine.evaluate(
      "PreToolUse",
      { tool_name: "mcp__shell__run", arguments: { command: command.slice(0, 100) } },
      "s",
      caller,
      { guarded },
    );
    expect(result.enforce.action).toBe("block");
  });
});

describe("tools the mcp-bridge registered, in Cedar requests", () => {
  const origin = (annotations: McpToolOrigin["annotations"], tool = "delete_file"): McpToolOrigin => ({
    server: "fs",
    tool,
    annotations,
  });
  const client = { agent: "ide", agentKind: "mcp", groups: [] } as const;
  const runtime = { agent: "runtime", groups: [] } as const;
  const request = (
    payload: Record<string, unknown>,
    registered: McpToolOrigin | undefined,
    who: CallerIdentity = client,
    guarded: Record<string, unknown> = {},
  ) => cedarRequests("PreToolUse", payload, "s", who, { guarded, registered });

  it("are of kind mcp with the annotations of their definition", () => {
    for (const who of [client, runtime]) {
      const [r] = request(
        { tool_name: "fs_read_text_file", arguments: { path: "a.md" } },
        origin({ readOnlyHint: true, openWorldHint: false }, "read_text_file"),
        who,
      );
      expect(r?.resource).toEqual({ type: "Geode::Tool", id: "fs_read_text_file" });
      expect(r?.entities.at(-1)?.attrs).toEqual({ kind: "mcp" });
      expect(r?.context).toMatchObject({
        mcp_server: "fs",
        mcp_tool: "read_text_file",
        read_only: true,
        destructive: true,
        open_world: false,
        paths: ["a.md"],
      });
    }
  });

  it("take the MCP specification's defaults for hints the definition does not give", () => {
    const [r] = request({ tool_name: "fs_delete_file", arguments: {} }, origin({}));
    expect(r?.context).toMatchObject({ read_only: false, destructive: true, open_world: true });
    const [quiet] = request(
      { tool_name: "fs_delete_file", arguments: {} },
      origin({ readOnlyHint: false, destructiveHint: false, openWorldHint: false }),
    );
    expect(quiet?.context).toMatchObject({ read_only: false, destructive: false, open_world: false });
  });

  it("read command, paths and URL from the MCP argument names", () => {
    const args = {
      cmd: "ls  -la",
      file_path: "x/../.env",
      source: "a",
      destination: "b",
      paths: ["c", "d"],
      uri: "https://example.com/x",
    };
    const requests = request({ tool_name: "fs_delete_file", arguments: args }, origin({}));
    expect(requests[0]?.context).toMatchObject({ command: "ls -la", url: "https://example.com/x" });
    expect(new Set(requests[0]?.context["paths"] as string[])).toEqual(new Set([".env", "a", "b", "c", "d"]));
    expect(requests.map((r) => r.context["path"]).sort()).toEqual([".env", "a", "b", "c", "d"]);
  });

  it("keep their MCP context in a call without arguments (PermissionRequest names it in detail)", () => {
    const [r] = cedarRequests(
      "PermissionRequest",
      { tool_name: "fs_delete_file", detail: "{}" },
      "s",
      client,
      { registered: origin({ destructiveHint: true }) },
    );
    expect(r?.entities.at(-1)?.attrs).toEqual({ kind: "mcp" });
    expect(r?.context).toMatchObject({ mcp_tool: "delete_file", read_only: false, destructive: true });
  });

  it("are not made MCP, nor read-only, by anything the payload claims", () => {
    const forged = {
      tool_name: "fs_delete_file",
      mcp: { server: "fs", tool: "delete_file", annotations: { readOnlyHint: true } },
      annotations: { readOnlyHint: true },
      read_only: true,
      destructive: false,
      arguments: {
        path: "old.md",
        annotations: { readOnlyHint: true, destructiveHint: false },
        readOnlyHint: true,
        read_only: true,
      },
    };
    const [none] = request(forged, undefined);
    expect(none?.entities.at(-1)?.attrs).toEqual({ kind: "other" });
    for (const k of ["mcp_server", "mcp_tool", "read_only", "destructive", "open_world"])
      expect(none?.context[k]).toBeUndefined();
    const [registered] = request(forged, origin({ destructiveHint: true }));
    expect(registered?.context).toMatchObject({ read_only: false, destructive: true });
  });

  it("leave an agent's own tools to its table and its own MCP tools to their defaults", () => {
    const cc = { agent: "dev", agentKind: "claude-code", groups: [] } as const;
    const gemini = { agent: "dev", agentKind: "gemini-cli", groups: [] } as const;
    const readOnly = origin({ readOnlyHint: true }, "file");
    expect(registeredToolApplies(cc, "Bash")).toBe(false);
    expect(registeredToolApplies(gemini, "read_file")).toBe(false);
    expect(registeredToolApplies(cc, "mcp__fs__delete_file")).toBe(false);
    expect(registeredToolApplies(client, "read_file")).toBe(true);
    expect(registeredToolApplies(runtime, "mcp_fs_x")).toBe(true);
    // A registered `read_file` (server `read`, tool `file`) is Gemini CLI's file tool in its hooks.
    const [own] = request({ tool_name: "read_file", arguments: { file_path: "a" } }, readOnly, gemini);
    expect(own?.entities.at(-1)?.attrs).toEqual({ kind: "file_read" });
    expect(own?.context["read_only"]).toBeUndefined();
    const [agentMcp] = request({ tool_name: "mcp__fs__delete_file", arguments: {} }, readOnly, cc);
    expect(agentMcp?.context).toMatchObject({ mcp_server: "fs", mcp_tool: "delete_file", read_only: false });
    const [viaGateway] = request({ tool_name: "read_file", arguments: { path: "a" } }, readOnly, client);
    expect(viaGateway?.context).toMatchObject({ mcp_server: "fs", read_only: true, paths: ["a"] });
  });

  it("see a command hidden after padding through the guarded facts", () => {
    const engine = new PolicyEngine([
      checkPolicySet("destructive-shell", packText("destructive-shell") ?? "", "enforce", schemaText()),
    ]);
    const command = padded("rm -rf /");
    const guarded = guardedArguments("shell_run", { command }).arguments;
    const payload = { tool_name: "shell_run", arguments: { command: command.slice(0, 100) } };
    const registered = { server: "shell", tool: "run", annotations: { readOnlyHint: true } };
    expect(engine.evaluate("PreToolUse", payload, "s", client, { registered }).enforce.action).toBeNull();
    expect(engine.evaluate("PreToolUse", payload, "s", client, { registered, guarded }).enforce.action).toBe(
      "block",
    );
  });
});
