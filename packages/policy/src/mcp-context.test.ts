import { guardedArguments } from "@geode/contracts";
import { describe, expect, it } from "vitest";
import { PolicyEngine } from "./policy-engine.js";
import { packText, schemaText } from "./policy-files.js";
import { cedarRequests } from "./policy-request.js";
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
      guarded,
    );
    expect(result.enforce.action).toBe("block");
  });
});
