import { readFileSync } from "node:fs";
import path from "node:path";
import {
  AGENT_TOOLS,
  type AgentKind,
  type McpToolOrigin,
  mcpToolName,
  type ToolKindEntry,
} from "@geode/contracts";
import { describe, expect, it } from "vitest";
import { PolicyEngine } from "./policy-engine.js";
import { packNames, packText, policiesDir, schemaText } from "./policy-files.js";
import { checkPolicySet } from "./policy-set.js";

/**
 * One row of a pack's examples table: a shell command, a file path or a URL, or an MCP tool call
 * (`tool`, an agent's MCP tool name, and its `arguments`), or a call of a tool the mcp-bridge
 * registered (`mcp`: its definition's origin and annotations, named `{server}_{tool}`).
 */
interface Example {
  tool?: string;
  mcp?: McpToolOrigin;
  arguments?: Record<string, unknown>;
  command?: string;
  path?: string;
  url?: string;
}
interface ExampleTable {
  refuse?: Example[];
  ask?: Example[];
  pass?: Example[];
}

/** The hooked agents, and the gateway's MCP clients (which name registered MCP tools only). */
const AGENTS: AgentKind[] = ["claude-code", "codex", "gemini-cli", "copilot", "qwen-code", "opencode", "mcp"];

function toolOf(agent: AgentKind, want: (e: ToolKindEntry) => boolean): [string, ToolKindEntry] | undefined {
  return Object.entries(AGENT_TOOLS[agent]).find(([, e]) => want(e));
}

/** The example as this agent's tool call (by the tool-kind table), or undefined when it has no such tool. */
function callOf(
  agent: AgentKind,
  ex: Example,
): { tool_name: string; arguments: Record<string, unknown> } | undefined {
  if (ex.mcp !== undefined)
    return { tool_name: mcpToolName(ex.mcp.server, ex.mcp.tool), arguments: ex.arguments ?? {} };
  if (ex.tool !== undefined) return { tool_name: ex.tool, arguments: ex.arguments ?? {} };
  if (ex.command !== undefined) {
    const t = toolOf(agent, (e) => e.kind === "shell" && e.command !== undefined);
    return t && { tool_name: t[0], arguments: { [t[1].command as string]: ex.command } };
  }
  if (ex.path !== undefined) {
    const t = toolOf(agent, (e) => e.kind === "file_read" && (e.paths?.length ?? 0) > 0);
    return t && { tool_name: t[0], arguments: { [t[1].paths?.[0] as string]: ex.path } };
  }
  const t = toolOf(agent, (e) => e.kind === "web_fetch");
  if (!t) return undefined;
  return {
    tool_name: t[0],
    arguments: t[1].url ? { [t[1].url]: ex.url } : { prompt: `summarize ${ex.url}` },
  };
}

const expected = { refuse: "block", ask: "request_permission", pass: null } as const;

describe("the shipped packs", () => {
  const schema = schemaText();
  const names = packNames();

  it("are the five of DESIGN section 17 and mcp-safety, each with an examples table", () => {
    expect(names).toEqual([
      "destructive-shell",
      "git-safety",
      "mcp-safety",
      "network-egress",
      "package-install-approval",
      "secrets-read",
    ]);
  });

  for (const name of names) {
    describe(name, () => {
      const engine = new PolicyEngine([checkPolicySet(name, packText(name) ?? "", "enforce", schema)]);
      const table = JSON.parse(
        readFileSync(path.join(policiesDir(), "packs", `${name}.examples.json`), "utf8"),
      ) as ExampleTable;
      for (const agent of AGENTS) {
        it(`decides its examples for ${agent}'s tool names`, () => {
          let checked = 0;
          for (const group of ["refuse", "ask", "pass"] as const) {
            for (const ex of table[group] ?? []) {
              const call = callOf(agent, ex);
              if (!call) continue;
              const caller = { agent: "dev", agentKind: agent, groups: [] };
              const result = engine.evaluate("PreToolUse", call, "s1", caller, { registered: ex.mcp });
              expect({ ex, tool: call.tool_name, action: result.enforce.action }).toEqual({
                ex,
                tool: call.tool_name,
                action: expected[group],
              });
              checked++;
            }
          }
          const registered = (["refuse", "ask", "pass"] as const).some((g) =>
            (table[g] ?? []).some((ex) => ex.mcp !== undefined),
          );
          expect(checked).toBeGreaterThanOrEqual(agent !== "mcp" ? 4 : registered ? 1 : 0);
        });
      }
    });
  }

  it("have rows of bridge-registered MCP tools where they guard MCP tools", () => {
    const rows = (name: string, group: keyof ExampleTable) => {
      const file = path.join(policiesDir(), "packs", `${name}.examples.json`);
      const table = JSON.parse(readFileSync(file, "utf8")) as ExampleTable;
      return (table[group] ?? []).flatMap((ex) => (ex.mcp ? [ex.mcp.annotations] : []));
    };
    // mcp-safety: destructive or unannotated tools are asked about; read-only and non-destructive pass.
    expect(rows("mcp-safety", "ask")).toEqual(
      expect.arrayContaining([{ destructiveHint: true }, {}, { readOnlyHint: false }]),
    );
    expect(rows("mcp-safety", "pass")).toEqual(
      expect.arrayContaining([{ readOnlyHint: true }, { readOnlyHint: false, destructiveHint: false }]),
    );
    // The packs that read paths and commands refuse registered tools by their arguments, read-only or not.
    expect(rows("secrets-read", "refuse")).toEqual(expect.arrayContaining([{ readOnlyHint: true }]));
    expect(rows("secrets-read", "pass").length).toBeGreaterThan(0);
    expect(rows("destructive-shell", "refuse")).toEqual(
      expect.arrayContaining([{ readOnlyHint: false, destructiveHint: false }]),
    );
    expect(rows("destructive-shell", "pass").length).toBeGreaterThan(0);
  });
});
