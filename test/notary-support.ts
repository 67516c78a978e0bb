import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import {
  encodeAuditLeaf,
  gapLeaf,
  leafHash,
  MerkleFrontier,
  messageLeaf,
  writeAuditKeyFile,
} from "@geode/audit";
import { runCliCaptured } from "@geode/cli/testing";
import { AUDIT_LOGS, type AuditLogName, RECORDER_CONSUMER } from "@geode/contracts";
import { type Notary, startNotary } from "@geode/notary";
import { createLogger } from "@geode/service";
import { type TestEnv, waitFor } from "@geode/testing";
import { DeliverPolicy } from "@nats-io/jetstream";
import { expect } from "vitest";

/** The stream's tree recomputed from its retained messages alone (a gap leaf for each missing sequence). */
export async function recomputeTree(
  env: Pick<TestEnv, "js" | "jsm" | "names">,
  log: AuditLogName,
): Promise<{ size: number; root: Uint8Array }> {
  const { js, jsm, names } = env;
  const stream = names.auditStream(log);
  const info = await jsm.streams.info(stream);
  const frontier = new MerkleFrontier();
  if (info.state.messages === 0) return { size: 0, root: frontier.root() };
  const consumer = await js.consumers.get(stream, { deliver_policy: DeliverPolicy.All });
  let expected = info.state.first_seq;
  const iter = await consumer.consume();
  for await (const m of iter) {
    for (; expected < m.seq; expected++) frontier.append(leafHash(encodeAuditLeaf(gapLeaf(expected))));
    const leaf = messageLeaf({
      seq: m.seq,
      subject: m.subject,
      msgId: m.headers?.get("Nats-Msg-Id") ?? "",
      data: m.data,
    });
    frontier.append(leafHash(encodeAuditLeaf(leaf)));
    expected = m.seq + 1;
    if (m.seq >= info.state.last_seq) break;
  }
  await iter.close();
  return { size: frontier.size, root: frontier.root() };
}

/** What `geode audit verify --json` reports of one log. */
interface VerifiedLog {
  log: AuditLogName;
  leaves: number;
  checkpoint_size: number;
  checkpoints: number;
  projection_rows_checked: boolean;
}

/** A notary on a test file's namespace, in this process, signing with a key of its own. */
export interface TestNotary {
  readonly notary: Notary;
  readonly keyFile: string;
  /**
   * Waits until the notary has signed, for each log, a checkpoint of everything its stream holds
   * now (and, with `projection`, until the recorder has nothing pending), then runs `geode audit
   * verify --json` over the namespace and expects it clean: exit 0, no divergence, both logs
   * covered by their latest checkpoint. Returns the logs it reported.
   */
  expectVerifiesClean(options?: { projection?: boolean; timeoutMs?: number }): Promise<VerifiedLog[]>;
  stop(): Promise<void>;
}

/** Starts a notary for `env`'s namespace (checkpoints every `checkpointMs`, default 200). */
export async function startTestNotary(
  env: TestEnv,
  options: { checkpointMs?: number } = {},
): Promise<TestNotary> {
  const dir = mkdtempSync(path.join(tmpdir(), "geode-test-notary-"));
  const keyFile = path.join(dir, "notary.key");
  writeAuditKeyFile(keyFile, `test-${env.ns}`);
  const notary = await startNotary({
    nc: env.nc,
    names: env.names,
    log: createLogger("notary", "warn"),
    databaseUrl: env.databaseUrl,
    keyFile,
    checkpointMs: options.checkpointMs ?? 200,
  });
  let stopped = false;
  return {
    notary,
    keyFile,
    async expectVerifiesClean({ projection = false, timeoutMs = 60_000 } = {}) {
      if (projection) await recorderCaughtUp(env, timeoutMs);
      await checkpointsCover(env, notary, timeoutMs);
      const r = await runCliCaptured(["audit", "verify", "--json", ...(projection ? ["--projection"] : [])], {
        ...process.env,
        ...env.env,
        GEODE_AUDIT_KEY_FILE: keyFile,
      });
      expect(r.err).toBe("");
      const report = JSON.parse(r.out) as { ok: boolean; divergence?: unknown; logs: VerifiedLog[] };
      expect(report.divergence).toBeUndefined();
      expect(report.ok).toBe(true);
      expect(r.code).toBe(0);
      expect(report.logs.map((l) => l.log)).toEqual(["events", "timeline"]);
      for (const l of report.logs) {
        expect(l.checkpoint_size, l.log).toBe(l.leaves);
        expect(l.projection_rows_checked).toBe(projection);
      }
      return report.logs;
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await notary.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Until the recorder's consumer of each stream has nothing pending or unacknowledged. */
async function recorderCaughtUp(env: TestEnv, timeoutMs: number): Promise<void> {
  const { jsm, names } = env;
  await waitFor(
    async () => {
      for (const stream of [names.eventsStream, names.timelineStream]) {
        const c = await jsm.consumers.info(stream, RECORDER_CONSUMER).catch(() => null);
        if (c === null || c.num_pending > 0 || c.num_ack_pending > 0) return false;
      }
      return true;
    },
    timeoutMs,
    100,
  );
}

/** Until the notary's latest checkpoint of each log covers every sequence its stream holds now. */
async function checkpointsCover(env: TestEnv, notary: Notary, timeoutMs: number): Promise<void> {
  for (const log of AUDIT_LOGS) {
    const { last_seq } = (await env.jsm.streams.info(env.names.auditStream(log))).state;
    await waitFor(
      () => {
        const s = notary.health().audit?.logs.find((l) => l.log === log);
        return s !== undefined && s.last_seq >= last_seq && s.checkpoint_size === s.size;
      },
      timeoutMs,
      100,
    );
  }
}
