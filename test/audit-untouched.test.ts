/**
 * An untouched run of the whole plane verifies clean: a Claude Code-shaped session through the
 * agent gateway (prompt, a tool call, a tool result, the answer, the session's end) and tool calls
 * through the tool-executor, recorded by the activity-recorder and notarised by the notary, pass
 * `geode audit verify --projection` on both logs.
 */
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { writeAuditKeyFile } from "@geode/audit";
import { runCliCaptured } from "@geode/cli/testing";
import type { ConsoleRecorder } from "@geode/contracts";
import { AuditStore, type Notary, startNotary } from "@geode/notary";
import { createLogger } from "@geode/service";
import { useTestEnv, waitFor } from "@geode/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ConsolePlane, startConsolePlane } from "./console-support.js";
import { ccInput } from "./gateway-support.js";

const env = useTestEnv();
const dir = mkdtempSync(path.join(tmpdir(), "geode-audit-untouched-"));
const keyFile = path.join(dir, "notary.key");
let plane: ConsolePlane;
let notary: Notary;

beforeAll(async () => {
  writeAuditKeyFile(keyFile, "untouched");
  plane = await startConsolePlane(env());
  notary = await startNotary({
    nc: env().nc,
    names: env().names,
    log: createLogger("notary", "warn"),
    databaseUrl: env().databaseUrl,
    keyFile,
    checkpointMs: 200,
  });
}, 60_000);

afterAll(async () => {
  await notary?.stop();
  await plane?.stop();
  rmSync(dir, { recursive: true, force: true });
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
    // The recorder has projected everything, and the notary has signed a checkpoint of each whole log.
    await waitFor(async () => {
      const r = (await plane.api("/api/recorder")).body as ConsoleRecorder;
      return r.streams.length > 0 && r.streams.every((s) => s.present && s.lag === 0);
    }, 60_000);
    const store = new AuditStore(plane.projection.root, env().ns);
    for (const [log, stream] of [
      ["events", env().names.eventsStream],
      ["timeline", env().names.timelineStream],
    ] as const) {
      const { messages } = (await env().jsm.streams.info(stream)).state;
      expect(messages).toBeGreaterThan(0);
      await waitFor(async () => (await store.latestCheckpoint(log))?.size === messages, 60_000, 100);
    }
    const r = await runCliCaptured(["audit", "verify", "--projection", "--json"], {
      ...process.env,
      NATS_URL: env().natsUrl,
      DATABASE_URL: env().databaseUrl,
      GEODE_NAMESPACE: env().ns,
      GEODE_AUDIT_KEY_FILE: keyFile,
    });
    expect(r.err).toBe("");
    expect(r.code).toBe(0);
    const report = JSON.parse(r.out) as { ok: boolean; logs: Array<{ log: string; leaves: number }> };
    expect(report.ok).toBe(true);
    expect(report.logs.every((l) => l.leaves > 0)).toBe(true);
  });
});
