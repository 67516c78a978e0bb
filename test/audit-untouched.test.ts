/**
 * An untouched run of the whole plane verifies clean: a Claude Code-shaped session through the
 * agent gateway (prompt, a tool call, a tool result, the answer, the session's end) and tool calls
 * through the tool-executor, recorded by the activity-recorder and notarised by the notary, pass
 * `geode audit verify --projection` on both logs.
 */
import { randomUUID } from "node:crypto";
import { useTestEnv } from "@geode/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ConsolePlane, startConsolePlane } from "./console-support.js";
import { ccInput } from "./gateway-support.js";
import { startTestNotary, type TestNotary } from "./notary-support.js";

const env = useTestEnv();
let plane: ConsolePlane;
let notary: TestNotary;

beforeAll(async () => {
  plane = await startConsolePlane(env());
  notary = await startTestNotary(env());
}, 60_000);

afterAll(async () => {
  await notary?.stop();
  await plane?.stop();
});

describe("an untouched run of the plane", () => {
  it("verifies clean, the projection included", { timeout: 120_000 }, async () => {
    for (let s = 0; s < 3; s++) {
      const session_id = randomUUID();
      const at = { session_id };
      await plane.claudeCode(ccInput("SessionStart", { source: "startup", model: "m" }, at));
      await plane.claudeCode(ccInput("UserPromptSubmit", { prompt: `task ${s}` }, at));
      const call = { tool_name: "Bash", tool_input: { command: "ls" }, tool_use_id: `toolu_${randomUUID()}` };
      await plane.claudeCode(ccInput("PreToolUse", call, at));
      await plane.claudeCode(ccInput("PostToolUse", { ...call, tool_response: { stdout: "a b" } }, at));
      await plane.claudeCode(ccInput("Stop", { last_assistant_message: "done" }, at));
      await plane.claudeCode(ccInput("SessionEnd", { reason: "exit" }, at));
    }
    const logs = await notary.expectVerifiesClean({ projection: true });
    expect(logs.every((l) => l.leaves > 0)).toBe(true);
  });
});
