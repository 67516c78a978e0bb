import { randomUUID } from "node:crypto";
import { ensureBucket } from "@geode/bus";
import { startConsole } from "@geode/console";
import { type ConsolePolicies, ConsolePoliciesSchema, HookName, sha256 } from "@geode/contracts";
import { packText } from "@geode/policy";
import { openProjectionDb } from "@geode/projection";
import { createHookClient } from "@geode/runtime";
import { useFixture, waitFor } from "@geode/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CONSOLE_TOKEN, startConsolePlane } from "./console-support.js";
import { ccInput } from "./gateway-support.js";
import { CORRELATION } from "./hooks-support.js";
import { keptLogger, putPack, putPolicy, type RunningGuard, startGuard } from "./policy-support.js";

const { fixture: plane } = useFixture(startConsolePlane, (p) => p.stop());
let guard: RunningGuard;

const sessionId = `cc-policies-${randomUUID()}`;
const session = { session_id: sessionId, prompt_id: `${sessionId}-p1` };
const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

async function policies(query = "?window=1h"): Promise<ConsolePolicies> {
  const r = await plane().api(`/api/policies${query}`);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return ConsolePoliciesSchema.parse(r.body);
}

/** A Bash call as Claude Code sends it through the gateway (agent `laptop`); the gateway's answer. */
async function bash(command: string, id: string): Promise<Record<string, unknown>> {
  const call = { tool_name: "Bash", tool_input: { command }, tool_use_id: `${sessionId}-${id}` };
  return plane().claudeCode(ccInput("PreToolUse", call, session));
}

beforeAll(async () => {
  const { env } = plane();
  guard = await startGuard(env, keptLogger([]));
  await putPack(env, "destructive-shell");
  await putPack(env, "secrets-read", "audit");
  await putPack(env, "git-safety");
  await guard.loaded(["destructive-shell", "secrets-read", "git-safety"]);
  await waitFor(() =>
    plane()
      .tools.dispatcher.handlers()
      .some((h) => h.hook === "PreToolUse" && h.name === "policy"),
  );
  await plane().claudeCode(ccInput("SessionStart", { source: "startup", model: "claude-test" }, session));
  // Audit mode: the guard would block reading .env, and lets it go.
  expect(JSON.stringify(await bash("cat .env", "t1"))).toBe("{}");
  // Enforced: rm -rf is refused.
  const denied = await bash("rm -rf /tmp/policies-x", "t2");
  expect(denied).toMatchObject({ hookSpecificOutput: { permissionDecision: "deny" } });
  // Enforced @ask, invoked on the plane as a runtime would (no approver needed to see the decision).
  const asked = await createHookClient(env.nc, env.names).invoke(
    HookName.PreToolUse,
    { tool_name: "shell.exec", arguments: { command: "git push origin main" } } as never,
    { ...CORRELATION, session_id: `${sessionId}-rt` },
  );
  expect(asked.decisions).toEqual([
    expect.objectContaining({ handler: "policy", action: "request_permission" }),
  ]);
  // The recorder projects asynchronously: wait until the three decisions are there.
  const askCount = async () =>
    sum((await policies()).decisions.series.filter((s) => s.outcome === "ask").flatMap((s) => s.counts));
  await waitFor(
    async () =>
      (await policies()).blocks.filter((b) => b.session_id === sessionId).length === 2 &&
      (await askCount()) === 1,
    30_000,
  );
}, 120_000);

afterAll(async () => {
  await guard?.guard.stop().catch(() => undefined);
});

describe("GET /api/policies", () => {
  it("lists the stored sets with mode, digest, last change and their policies' ids", async () => {
    const { sets } = await policies();
    expect(sets.map((s) => [s.name, s.mode])).toEqual([
      ["destructive-shell", "enforce"],
      ["git-safety", "enforce"],
      ["secrets-read", "audit"],
    ]);
    const [shell, , secrets] = sets;
    expect(shell!.sha256).toBe(sha256(packText("destructive-shell") ?? ""));
    expect(shell!.updated_by).toBe("test");
    expect(shell!.created_at).toBeLessThanOrEqual(Date.now());
    expect(shell!.policies).toContain("destructive-shell.rm-recursive-force");
    expect(secrets!.policies).toContain("secrets-read.secrets-in-command");
    expect(JSON.stringify(sets)).not.toContain("forbid");
  });

  it("shows what is in force: a refused newer value with why, a key of which nothing is in force", async () => {
    const { env } = plane();
    const text = 'forbid (principal, action, resource) when { resource.kind == "web_fetch" };';
    await putPolicy(env, "console-kept", text);
    const kv = await ensureBucket(env.nc, env.names, "policies");
    const stored = JSON.parse((await kv.get("console-kept"))?.string() ?? "") as Record<string, unknown>;
    await kv.put("console-kept", JSON.stringify({ ...stored, text: "forbid (principal," }));
    await kv.put("console-misnamed", JSON.stringify({ ...stored, name: "console-kept" }));
    try {
      const { sets, refused } = await policies();
      expect(sets.find((s) => s.name === "console-kept")).toMatchObject({
        sha256: sha256(text),
        policies: ["console-kept.policy0"],
        refused: {
          revision: expect.any(Number),
          reason: expect.stringMatching(/^policy set console-kept: 1:\d+: /),
        },
      });
      expect(sets.find((s) => s.name === "destructive-shell")?.refused).toBeNull();
      expect(refused).toEqual([
        {
          key: "console-misnamed",
          revision: expect.any(Number),
          reason: "stored under the key console-misnamed but named console-kept",
        },
      ]);
    } finally {
      await kv.delete("console-kept");
      await kv.delete("console-misnamed");
    }
  });

  it("counts the decisions per policy and outcome over the window: the enforced block, the audited one", async () => {
    const { decisions } = await policies();
    expect(decisions).toMatchObject({ window: "1h", window_ms: 3_600_000, bucket_ms: 60_000 });
    expect(decisions.buckets).toHaveLength(60);
    const of = (policy: string) => decisions.series.filter((s) => s.policy === policy);
    expect(of("destructive-shell.rm-recursive-force").map((s) => [s.outcome, sum(s.counts)])).toEqual([
      ["block", 1],
    ]);
    expect(of("secrets-read.secrets-in-command").map((s) => [s.outcome, sum(s.counts)])).toEqual([
      ["audit", 1],
    ]);
    // An enforced @ask stops nothing (no block row) but is counted as the ask it was.
    expect(of("git-safety.protected-branch-push").map((s) => [s.outcome, sum(s.counts)])).toEqual([
      ["ask", 1],
    ]);
    for (const s of decisions.series) {
      expect(s.counts).toHaveLength(60);
      if (s.policy.startsWith("secrets-read.")) expect(s.outcome).toBe("audit");
    }
    // The latest minute holds them.
    const rm = of("destructive-shell.rm-recursive-force")[0]!;
    expect(rm.counts.slice(-2).reduce((a, b) => a + b, 0)).toBe(1);
  });

  it("shows the latest blocks, newest first, with the session, its agent, the tool, the policies and why", async () => {
    const blocks = (await policies()).blocks.filter((b) => b.session_id === sessionId);
    expect(blocks).toEqual([
      expect.objectContaining({
        session_id: sessionId,
        tool_call_id: `${sessionId}-t2`,
        agent: "laptop",
        agent_kind: "claude-code",
        hook: "PreToolUse",
        tool_name: "Bash",
        action: "block",
        mode: "enforce",
        policies: expect.arrayContaining(["destructive-shell.rm-recursive-force"]),
        reason: "recursive forced deletion (rm -rf) is not allowed",
      }),
      expect.objectContaining({
        tool_call_id: `${sessionId}-t1`,
        agent: "laptop",
        action: "block",
        mode: "audit",
        policies: expect.arrayContaining(["secrets-read.secrets-in-command"]),
      }),
    ]);
    expect(blocks[0]!.ts).toBeGreaterThanOrEqual(blocks[1]!.ts);
    expect(JSON.stringify(blocks)).not.toContain("/tmp/policies-x");
  });

  it("answers 401 without the token and 400 with a code for bad query values", async () => {
    const anonymous = await plane().api("/api/policies", { token: null });
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.error.code).toBe("policy_denied");
    for (const [query, message] of [
      ["?window=2h", "window must be one of 15m, 1h, 6h, 24h"],
      ["?since=1", "unknown query parameter(s): since"],
      ["?window=1h&window=6h", "window is given more than once"],
    ]) {
      const r = await plane().api(`/api/policies${query}`);
      expect(r.status, query).toBe(400);
      expect(r.body.error).toEqual({ code: "invalid_request", message });
    }
    expect((await plane().api("/api/policies", { method: "POST", body: {} })).status).toBe(405);
  });

  it("says so with 503 when the projection's database or the KV is unreachable, and keeps serving", async () => {
    const { env } = plane();
    const deadDb = await openProjectionDb({
      ns: env.ns,
      databaseUrl: "postgres://postgres@127.0.0.1:1/test",
      migrate: false,
    });
    const nc = await env.connect("console-cut-off");
    const noDb = await startConsole({
      conn: { nc: env.nc, names: env.names },
      token: CONSOLE_TOKEN,
      port: 0,
      projection: { db: deadDb.db, ns: env.ns },
    });
    const noKv = await startConsole({ conn: { nc, names: env.names }, token: CONSOLE_TOKEN, port: 0 });
    await nc.close();
    const get = (base: string, path: string) =>
      fetch(`${base}${path}`, { headers: { authorization: `Bearer ${CONSOLE_TOKEN}` } });
    try {
      const db = await get(noDb.url, "/api/policies");
      expect(db.status).toBe(503);
      expect(await db.json()).toEqual({
        error: {
          code: "unavailable",
          message: expect.stringMatching(
            /^the projection could not be read: its database .* is unreachable: start the plane with `geode up`/,
          ),
        },
      });
      const kv = await get(noKv.url, "/api/policies");
      expect(kv.status).toBe(503);
      expect(await kv.json()).toEqual({
        error: {
          code: "unavailable",
          message: "the console's NATS connection is closed: restart geode console",
        },
      });
      // Without its database the console still serves; without NATS every API route says why.
      expect((await get(noDb.url, "/api/me")).status).toBe(200);
      expect((await get(noKv.url, "/api/me")).status).toBe(503);
    } finally {
      await noDb.close();
      await noKv.close();
      await deadDb.close();
    }
  });
});
