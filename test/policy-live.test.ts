/**
 * `geode policy test --live` on the real stack: the call goes through the running dispatcher to
 * the running policy-guard, in a probe session the guard resolves the principal and groups of as it
 * does for an agent's own sessions; the result has the local command's shape and exit codes.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { ensureBucket } from "@geode/bus";
import { runCliCaptured } from "@geode/cli/testing";
import type { HookDispatcher } from "@geode/hook-dispatcher";
import { useTestEnv, waitFor } from "@geode/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startDispatcher } from "./hooks-support.js";
import { keptLogger, type RunningGuard, startGuard } from "./policy-support.js";

const env = useTestEnv();
const geode = (...argv: string[]) => runCliCaptured(argv, { ...process.env, ...env().env });
const dir = mkdtempSync(path.join(tmpdir(), "geode-policy-live-"));
let running: RunningGuard | undefined;
let dispatcher: HookDispatcher | undefined;

afterAll(async () => {
  await running?.guard.stop();
  await dispatcher?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const rmCall = JSON.stringify({ tool_name: "Bash", arguments: { command: "rm -rf build" } });
const lsCall = JSON.stringify({ tool_name: "Bash", arguments: { command: "ls" } });
const live = (payload: string, ...more: string[]) =>
  geode("policy", "test", "--live", "--hook", "PreToolUse", "--payload", payload, ...more);
const RM_REASON =
  "recursive forced deletion (rm -rf) is not allowed (policy destructive-shell.rm-recursive-force)";

describe("geode policy test --live without a plane to ask", () => {
  it("says what is missing and exits 1: no NATS, no guard registered, no dispatcher", async () => {
    const noNats = await runCliCaptured(
      ["policy", "test", "--live", "--hook", "PreToolUse", "--payload", rmCall],
      { ...process.env, ...env().env, NATS_URL: "nats://127.0.0.1:1" },
    );
    expect(noNats.code).toBe(1);
    expect(noNats.err).toMatch(/cannot connect to NATS at nats:\/\/127\.0\.0\.1:1/);

    const noGuard = await live(rmCall);
    expect(noGuard.code).toBe(1);
    expect(noGuard.err).toContain(
      `no policy-guard is registered for PreToolUse in namespace ${env().ns}: start the plane`,
    );

    running = await startGuard(env(), keptLogger([]));
    const noDispatcher = await live(rmCall);
    expect(noDispatcher.code).toBe(1);
    expect(noDispatcher.err).toContain(`no hook-dispatcher answers in namespace ${env().ns}`);
  });

  it("refuses what the running guard does not take from the caller (exit 2)", async () => {
    for (const extra of [
      ["--pack", "destructive-shell"],
      ["--group", "contractors"],
      ["--session", "s-1"],
      ["--agent-kind", "codex"],
    ]) {
      const refused = await live(rmCall, ...extra);
      expect(refused.code, extra.join(" ")).toBe(2);
    }
  });
});

describe("geode policy test --live through the running guard", () => {
  beforeAll(async () => {
    dispatcher = await startDispatcher(env());
    running ??= await startGuard(env(), keptLogger([]));
    expect((await geode("policy", "add", "--pack", "destructive-shell")).code).toBe(0);
    await running.loaded(["destructive-shell"]);
  });

  it("blocks as the local evaluation does: same JSON, exit 3; a harmless call exits 0", async () => {
    const blocked = await live(rmCall, "--json");
    expect(blocked.code, blocked.err).toBe(3);
    const result = JSON.parse(blocked.out) as unknown;
    expect(result).toEqual({
      blocked: true,
      decision: "block",
      policies: ["destructive-shell.rm-recursive-force"],
      reason: RM_REASON,
    });
    const local = await geode("policy", "test", "--hook", "PreToolUse", "--payload", rmCall, "--json");
    expect(JSON.parse(local.out)).toEqual(result);

    const text = await live(rmCall);
    expect(text.code).toBe(3);
    expect(text.out).toMatch(/^live: session policy-test-[0-9a-f-]{36}, principal Geode::Agent::"runtime"$/m);
    expect(text.out).toContain("outcome: blocked by policy\n");
    expect(text.out).toContain("policies: destructive-shell.rm-recursive-force\n");

    const harmless = await live(lsCall, "--json");
    expect(harmless.code, harmless.err).toBe(0);
    expect(JSON.parse(harmless.out)).toEqual({ blocked: false, decision: null, policies: [], reason: "" });
  });

  it("--agent: the guard resolves the agent and its groups from the probe session; the probe is purged", async () => {
    expect((await geode("agents", "add", "temp", "--group", "contractors")).code).toBe(0);
    const scoped = path.join(dir, "scoped.cedar");
    writeFileSync(
      scoped,
      '@id("no-contractor-shell")\n@reason("contractors run no shell")\nforbid (principal in Geode::Group::"contractors", action, resource) when { resource.kind == "shell" && context.agent_kind == "codex" };\n',
    );
    expect((await geode("policy", "add", "scoped", scoped)).code).toBe(0);
    await running?.loaded(["destructive-shell", "scoped"]);

    const asTemp = await live(lsCall, "--agent", "temp", "--agent-kind", "codex");
    expect(asTemp.code, asTemp.err).toBe(3);
    expect(asTemp.out).toMatch(/principal Geode::Agent::"temp" in groups contractors$/m);
    expect(asTemp.out).toContain("policies: scoped.no-contractor-shell\n");
    expect(asTemp.out).toContain("reason: contractors run no shell (policy scoped.no-contractor-shell)\n");
    // The same agent under another kind, and a runtime's session, are not contractors' codex calls.
    expect((await live(lsCall, "--agent", "temp", "--agent-kind", "gemini-cli")).code).toBe(0);
    expect((await live(lsCall)).code).toBe(0);

    const unknown = await live(lsCall, "--agent", "nobody");
    expect(unknown.code).toBe(1);
    expect(unknown.err).toContain(`no agent nobody in namespace ${env().ns}`);
    const sessions = await ensureBucket(env().nc, env().names, "sessions");
    const left: string[] = [];
    for await (const key of await sessions.keys()) left.push(key);
    expect(left.filter((k) => k.startsWith("policy-test-"))).toEqual([]);
  });

  it("an @ask policy: request_permission, not blocked, exit 0, as the local evaluation says", async () => {
    expect((await geode("policy", "add", "--pack", "git-safety")).code).toBe(0);
    await running?.loaded(["destructive-shell", "scoped", "git-safety"]);
    const push = JSON.stringify({ tool_name: "Bash", arguments: { command: "git push origin main" } });
    const asked = await live(push, "--json");
    expect(asked.code, asked.err).toBe(0);
    const local = await geode("policy", "test", "--hook", "PreToolUse", "--payload", push, "--json");
    expect(JSON.parse(asked.out)).toEqual(JSON.parse(local.out));
    expect(JSON.parse(asked.out)).toMatchObject({ blocked: false, decision: "request_permission" });
    expect((await geode("policy", "rm", "git-safety")).code).toBe(0);
  });

  it("a set in audit mode: not blocked, exit 0, the would-be decision and its policies from the audit", async () => {
    expect((await geode("policy", "rm", "scoped")).code).toBe(0);
    expect((await geode("policy", "add", "--pack", "destructive-shell", "--mode", "audit")).code).toBe(0);
    await running?.loaded(["destructive-shell"]);
    const local = await geode("policy", "test", "--hook", "PreToolUse", "--payload", rmCall, "--json");
    expect(JSON.parse(local.out)).toMatchObject({ blocked: false, decision: null });
    const guard = running as RunningGuard;
    await waitFor(
      () => guard.guard.loader.engine.loaded().find((s) => s.name === "destructive-shell")?.mode === "audit",
    );
    const audited = await live(rmCall, "--json");
    expect(audited.code, audited.err).toBe(0);
    expect(JSON.parse(audited.out)).toEqual(JSON.parse(local.out));
    expect(JSON.parse(audited.out)).toEqual({
      blocked: false,
      decision: null,
      policies: ["destructive-shell.rm-recursive-force"],
      reason: `audit: would block: ${RM_REASON}`,
    });
  });
});
