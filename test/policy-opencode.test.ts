/**
 * A shipped pack guards opencode as it guards the other agents: with `geode policy add --pack
 * destructive-shell` in force, the real opencode asks for `rm -rf` and then for a harmless command
 * in one session; the folder survives, the model reads the policy's reason, the harmless command
 * runs, and the audit names the handler `policy`.
 */
import { existsSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { plantPrecious, preciousSurvives, RM_PRECIOUS } from "./agent-plane-support.js";
import { chatToolOutputs } from "./chat-completions-stand-in.js";
import { bashTurn, opencodeSession } from "./opencode-support.js";
import { usePolicyPlane } from "./policy-support.js";

const plane = usePolicyPlane("policy-opencode", ["destructive-shell"]);
const POLICY = "destructive-shell.rm-recursive-force";
const REFUSAL = `policy: recursive forced deletion (rm -rf) is not allowed (policy ${POLICY})`;

describe("geode policy add --pack destructive-shell guards opencode through the gateway", () => {
  it("rm -rf is refused and never runs, a harmless command runs", { timeout: 240_000 }, async () => {
    const script = [bashTurn(RM_PRECIOUS), bashTurn("touch harmless.txt"), { text: "Done." }];
    const { run, api, work, sessionId } = await opencodeSession(plane, script, { prepare: plantPrecious });
    expect(run.code, run.stderr.slice(-1500)).toBe(0);
    expect(preciousSurvives(work)).toBe(true);
    expect(existsSync(path.join(work, "harmless.txt"))).toBe(true);
    expect(chatToolOutputs(api).join("\n")).toContain(REFUSAL);
    expect(sessionId).not.toBe("");
    await plane.expectPolicyAudit(sessionId, POLICY);
  });
});
