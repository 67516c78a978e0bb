/**
 * Shared pieces of the policy tests: a policy-guard in-process on its own NATS connection (so a
 * test can cut it off like a crashed process), policy sets written as `geode policy add` writes
 * them, a logger that keeps what the guard logs, and the agent plane with the guard and packs in
 * force that real agent CLIs are governed through.
 */
import type { Logger } from "@geode/bus";
import { type PolicyMode, policyRecord } from "@geode/contracts";
import { packText } from "@geode/policy";
import { type PolicyGuard, startPolicyGuard } from "@geode/policy-guard";
import { PolicyStore } from "@geode/state";
import { type TestEnv, waitFor } from "@geode/testing";
import type { NatsConnection } from "@nats-io/transport-node";
import pg from "pg";
import { afterAll, beforeAll, expect } from "vitest";
import { type AgentPlane, useAgentPlane } from "./agent-plane-support.js";

/** A logger that records each line's message and fields. */
export function keptLogger(lines: Array<{ msg: string; fields: unknown }>): Logger {
  const keep = (fields: unknown, msg?: string) => {
    lines.push({ msg: msg ?? String(fields), fields });
  };
  const log = {
    info: keep,
    warn: keep,
    error: keep,
    debug: () => undefined,
    fatal: keep,
    trace: () => undefined,
  };
  return { ...log, child: () => log } as unknown as Logger;
}

/** Writes a policy set the way `geode policy add` does (after its check). */
export async function putPolicy(
  env: TestEnv,
  name: string,
  text: string,
  mode: PolicyMode = "enforce",
): Promise<void> {
  await (await PolicyStore.open({ nc: env.nc, names: env.names })).put(
    policyRecord(name, text, mode, "test"),
  );
}

export async function putPack(env: TestEnv, pack: string, mode: PolicyMode = "enforce"): Promise<void> {
  await putPolicy(env, pack, packText(pack) ?? "", mode);
}

export interface RunningGuard {
  guard: PolicyGuard;
  nc: NatsConnection;
  /** Waits until the guard has loaded exactly these sets (name → sha256 of the text). */
  loaded(names: string[]): Promise<void>;
}

export async function startGuard(env: TestEnv, log: Logger): Promise<RunningGuard> {
  const nc = await env.connect("policy-guard");
  const guard = await startPolicyGuard({ nc, names: env.names, log, leaseMs: 60_000 });
  return {
    guard,
    nc,
    async loaded(names) {
      await waitFor(() => {
        const have = guard.loader.engine.loaded().map((s) => s.name);
        return have.length === names.length && names.every((n) => have.includes(n));
      });
    },
  };
}

/** The agent plane with a policy-guard beside it and the packs it was given in force. */
export interface PolicyPlane extends AgentPlane {
  guard(): RunningGuard;
  /**
   * Waits until the plane recorded the session's PreToolUse calls of the handler `policy`: one
   * `block` whose audited reason names `policy` (a policy id), and at least one `ok` (a call it let
   * through), as `geode audit` and the activity rows show them.
   */
  expectPolicyAudit(sessionId: string, policy: string): Promise<void>;
}

/**
 * `useAgentPlane(agentName)` plus a policy-guard, and each pack stored by `geode policy add --pack`
 * and loaded by the guard before the file's first test.
 */
export function usePolicyPlane(agentName: string, packs: string[]): PolicyPlane {
  const plane = useAgentPlane(agentName);
  let running: RunningGuard | undefined;

  beforeAll(async () => {
    running = await startGuard(plane.env(), keptLogger([]));
    for (const pack of packs) {
      const added = await plane.geode(["policy", "add", "--pack", pack]);
      expect(added.code, added.err).toBe(0);
    }
    await running.loaded(packs);
  }, 60_000);

  afterAll(async () => {
    await running?.guard.stop();
  });

  async function expectPolicyAudit(sessionId: string, policy: string): Promise<void> {
    type Row = { name: string; extension: string; status: string };
    let rows: Row[] = [];
    await waitFor(async () => {
      const audit = await plane.geode(["audit", "--session", sessionId, "--json", "--limit", "200"]);
      rows = (JSON.parse(audit.out || "[]") as Row[]).filter(
        (r) => r.name === "PreToolUse" && r.extension === "policy",
      );
      return rows.some((r) => r.status === "block") && rows.some((r) => r.status === "ok");
    }, 30_000);
    const db = new pg.Client({ connectionString: plane.env().databaseUrl });
    await db.connect();
    try {
      const audited = await db.query(
        `select payload from ${plane.env().ns}.activity_events where session_id = $1 and event = 'extension_invoked'`,
        [sessionId],
      );
      const reasons = audited.rows
        .map((r) => r.payload as { extension?: string; status?: string; reason?: string })
        .filter((p) => p.extension === "policy" && p.status === "block")
        .map((p) => p.reason);
      expect(reasons).toEqual([expect.stringContaining(policy)]);
    } finally {
      await db.end();
    }
  }

  return {
    ...plane,
    guard: () => {
      if (!running) throw new Error("the policy-guard is not running: use it inside a test");
      return running;
    },
    expectPolicyAudit,
  };
}
