/**
 * Shared pieces of the policy tests: a policy-guard in-process on its own NATS connection (so a
 * test can cut it off like a crashed process), policy sets written as `geode policy add` writes
 * them, and a logger that keeps what the guard logs.
 */
import type { Logger } from "@geode/bus";
import { type PolicyMode, policyRecord } from "@geode/contracts";
import { packText } from "@geode/policy";
import { type PolicyGuard, startPolicyGuard } from "@geode/policy-guard";
import { PolicyStore } from "@geode/state";
import { type TestEnv, waitFor } from "@geode/testing";
import type { NatsConnection } from "@nats-io/transport-node";

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
