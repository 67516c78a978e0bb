import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { PolicyEngine } from "./policy-engine.js";
import { packNames, policiesDir, schemaText } from "./policy-files.js";
import { checkPolicySet } from "./policy-set.js";

const guide = readFileSync(path.join(policiesDir(), "..", "docs", "policies.md"), "utf8");

describe("docs/policies.md", () => {
  it("its Cedar examples validate against the shipped schema and decide as it says", () => {
    const blocks = [...guide.matchAll(/```cedar\n([\s\S]*?)```/g)].map((m) => m[1] as string);
    expect(blocks.length).toBeGreaterThan(0);
    const sets = blocks.map((text, i) => checkPolicySet(`doc${i}`, text, "enforce", schemaText()));
    const engine = new PolicyEngine(sets);
    const caller = { agent: "temp", groups: ["contractors"] };
    const shell = { tool_name: "Bash", arguments: { command: "ls" } };
    expect(engine.evaluate("PreToolUse", shell, "s", caller).enforce.action).toBe("block");
    expect(
      engine.evaluate("PreToolUse", shell, "s", { ...caller, groups: ["staff"] }).enforce.action,
    ).toBeNull();
    const write = (file_path: string) => ({ tool_name: "Write", arguments: { file_path, content: "x" } });
    expect(engine.evaluate("PreToolUse", write("docs/a.md"), "s", caller).enforce.action).toBe(
      "request_permission",
    );
    expect(engine.evaluate("PreToolUse", write("src/a.ts"), "s", caller).enforce.action).toBeNull();
  });

  it("names every shipped pack in its table", () => {
    for (const pack of packNames()) expect(guide).toMatch(new RegExp(`^\\| \`${pack}\` \\|`, "m"));
  });
});
