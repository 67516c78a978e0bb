import { readFileSync } from "node:fs";
import path from "node:path";
import { AGENT_TOOLS, type AgentKind, type ToolKindEntry } from "@geode/contracts";
import { describe, expect, it } from "vitest";
import { PolicyEngine } from "./policy-engine.js";
import { packNames, packText, policiesDir, schemaText } from "./policy-files.js";
import { checkPolicySet } from "./policy-set.js";

/**
 * One row of a pack's examples table: a shell command, a file path or a URL, or an MCP tool call
 * (`tool`, an agent's MCP tool name, and its `arguments`).
 */
interface Example {
  tool?: string;
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

const AGENTS: AgentKind[] = ["claude-code", "codex", "gemini-cli", "copilot"];

function toolOf(agent: AgentKind, want: (e: ToolKindEntry) => boolean): [string, ToolKindEntry] | undefined {
  return Object.entries(AGENT_TOOLS[agent]).find(([, e]) => want(e));
}

/** The example as this agent's tool call (by the tool-kind table), or undefined when it has no such tool. */
function callOf(
  agent: AgentKind,
  ex: Example,
): { tool_name: string; arguments: Record<string, unknown> } | undefined {
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
              const result = engine.evaluate("PreToolUse", call, "s1", {
                agent: "dev",
                agentKind: agent,
                groups: [],
              });
              expect({ ex, tool: call.tool_name, action: result.enforce.action }).toEqual({
                ex,
                tool: call.tool_name,
                action: expected[group],
              });
              checked++;
            }
          }
          expect(checked).toBeGreaterThan(3);
        });
      }
    });
  }
});
