/**
 * One shipped pack guards every agent the gateway governs: with `geode policy add --pack
 * destructive-shell` in force, the real Codex CLI, Gemini CLI, Copilot CLI and Qwen Code each ask for
 * `rm -rf` and then for a harmless command in one session; the folder survives, the agent reads
 * the policy's reason, the harmless command runs, and the audit names the handler `policy`.
 */
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { codexSession, codexToolOutputs } from "./codex-support.js";
import { copilotSession, copilotToolOutputs } from "./copilot-support.js";
import { geminiSession, geminiToolOutputs } from "./gemini-support.js";
import { usePolicyPlane } from "./policy-support.js";
import { qwenSession, qwenToolOutputs } from "./qwen-code-support.js";

const plane = usePolicyPlane("policy-laptop", ["destructive-shell"]);
const POLICY = "destructive-shell.rm-recursive-force";
/** What the agent is told, as the gateway words a handler's refusal: `<handler>: <reason>`. */
const REFUSAL = `policy: recursive forced deletion (rm -rf) is not allowed (policy ${POLICY})`;

/** A working folder with `precious/data.txt` in it. */
const precious = (work: string) => {
  mkdirSync(path.join(work, "precious"));
  writeFileSync(path.join(work, "precious", "data.txt"), "keep me");
};
const script = [{ shell: "rm -rf precious" }, { shell: "touch harmless.txt" }, { text: "Done." }];

/** The folder survived, the harmless command ran, the refusal reached the model, the audit says who. */
async function expectGuarded(work: string, outputs: string[], sessionId: string): Promise<void> {
  expect(existsSync(path.join(work, "precious", "data.txt"))).toBe(true);
  expect(existsSync(path.join(work, "harmless.txt"))).toBe(true);
  expect(outputs.join("\n")).toContain(REFUSAL);
  expect(sessionId).not.toBe("");
  await plane.expectPolicyAudit(sessionId, POLICY);
}

// Each case runs a real agent process (and its hook commands): give it room on a loaded machine.
const CLI = { timeout: 240_000 };

describe("geode policy add --pack destructive-shell guards every agent through the gateway", () => {
  it("Codex CLI: rm -rf is denied and never runs, a harmless command runs", CLI, async () => {
    const { run, api, work, sessionId } = await codexSession(plane, script, { prepare: precious });
    expect(run.code, run.stderr.slice(-1500)).toBe(0);
    await expectGuarded(work, codexToolOutputs(api), sessionId);
  });

  it("Gemini CLI: rm -rf is denied and never runs, a harmless command runs", CLI, async () => {
    const { run, api, work, sessionId } = await geminiSession(plane, script, { prepare: precious });
    expect(run.code, run.stderr.slice(-1500)).toBe(0);
    await expectGuarded(work, geminiToolOutputs(api), sessionId);
  });

  it("Copilot CLI: rm -rf is denied and never runs, a harmless command runs", CLI, async () => {
    const { run, api, work, sessionId } = await copilotSession(plane, script, { prepare: precious });
    expect(run.code, run.stderr.slice(-1500)).toBe(0);
    await expectGuarded(work, copilotToolOutputs(api), sessionId);
  });

  it("Qwen Code: rm -rf is denied and never runs, a harmless command runs", CLI, async () => {
    const { run, api, work, sessionId } = await qwenSession(plane, script, { prepare: precious });
    expect(run.code, run.stderr.slice(-1500)).toBe(0);
    await expectGuarded(work, qwenToolOutputs(api), sessionId);
  });
});
