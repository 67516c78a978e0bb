import { noteVerifier, readAuditKeyFile } from "@geode/audit";
import type { Names } from "@geode/contracts";
import type { ProjectionDb } from "@geode/projection";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { type LogName, logsOption } from "../audit/audit-options.js";
import { readCheckpoints, readStoredLog } from "../audit/audit-tables.js";
import { divergenceText, verifyLog } from "../audit/verify-log.js";

/** One log of the demo's run as `geode audit verify` found it. */
interface DemoAuditLog {
  origin: string;
  leaves: number;
  /** The size of the latest signed checkpoint checked. */
  checkpointSize: number;
  checkpoints: number;
}

/** What the demo's own audit check found (DESIGN section 20). */
export type DemoAudit =
  | { status: "verified"; logs: DemoAuditLog[]; verifierKey: string }
  | { status: "failed"; message: string }
  | { status: "skipped"; reason: string };

/** The leaves a log's checkpoint must hold to cover its stream: every sequence up to the last. */
async function leavesToCover(nc: NatsConnection, names: Names, log: LogName, projection: ProjectionDb) {
  const jsm = await jetstreamManager(nc, { checkAPI: false });
  const { state } = await jsm.streams.info(names.auditStream(log));
  if (state.last_seq === 0) return 0;
  const stored = await readStoredLog(projection.root, projection.ns, log);
  return state.last_seq - (stored?.firstSeq ?? state.first_seq) + 1;
}

/**
 * Until the notary has signed, for each log, a checkpoint that covers everything the stream holds
 * now; the log that is still short after `timeoutMs`, or undefined.
 */
export async function awaitCheckpoints(o: {
  nc: NatsConnection;
  names: Names;
  projection: ProjectionDb;
  timeoutMs: number;
}): Promise<string | undefined> {
  const deadline = Date.now() + o.timeoutMs;
  for (const log of logsOption(undefined)) {
    const need = await leavesToCover(o.nc, o.names, log, o.projection);
    for (;;) {
      const latest = (await readCheckpoints(o.projection.root, o.projection.ns, log)).at(-1);
      if ((latest?.size ?? 0) >= need) break;
      if (Date.now() > deadline)
        return `no signed checkpoint of ${o.names.auditLog(log)} covers its ${need} entries within ${o.timeoutMs / 1000} s (the latest is of size ${latest?.size ?? 0})`;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return undefined;
}

/**
 * The demo's run checked as `geode audit verify --projection` checks it: both logs re-read from
 * their streams, the tree recomputed, every checkpoint's signature checked against the verifier
 * key of the notary's key file, and every projection row compared with its message.
 */
export async function verifyDemoAudit(o: {
  nc: NatsConnection;
  names: Names;
  projection: ProjectionDb;
  keyFile: string;
}): Promise<DemoAudit> {
  const { verifierKey } = readAuditKeyFile(o.keyFile);
  const verifier = noteVerifier(verifierKey);
  const js = jetstream(o.nc);
  const jsm = await jetstreamManager(o.nc, { checkAPI: false });
  const logs: DemoAuditLog[] = [];
  for (const log of logsOption(undefined)) {
    const v = await verifyLog({
      js,
      jsm,
      names: o.names,
      projection: o.projection,
      log,
      verifier,
      extraCheckpoints: [],
      checkProjection: true,
    });
    if (v.divergence) return { status: "failed", message: `${v.origin}: ${divergenceText(v.divergence)}` };
    if (v.checkpoints === 0 && v.leaves > 0)
      return { status: "failed", message: `${v.origin}: ${v.leaves} entries and no signed checkpoint` };
    logs.push({
      origin: v.origin,
      leaves: v.leaves,
      checkpointSize: v.checkpoint_size,
      checkpoints: v.checkpoints,
    });
  }
  return { status: "verified", logs, verifierKey };
}

/** The one line the demo's summary says of its audit. */
export function auditLine(a: DemoAudit): string {
  if (a.status === "skipped") return `audit: not checked (${a.reason})`;
  if (a.status === "failed") return `audit: DOES NOT VERIFY: ${a.message}`;
  const entries = a.logs.reduce((s, l) => s + l.leaves, 0);
  const logs = a.logs.map((l) => `${l.origin.split("/").at(-1)} ${l.leaves}`).join(", ");
  const key = a.verifierKey.split("+").slice(0, 2).join("+");
  // Entries appended after the checkpoint the demo waited for (services that publish as they stop).
  const after = a.logs
    .filter((l) => l.checkpointSize < l.leaves)
    .map((l) => `; ${l.leaves - l.checkpointSize} ${l.origin} entries came after its latest checkpoint`);
  return `audit: the log of ${entries} entries (${logs}) verifies against checkpoints signed by ${key}, projection rows included${after.join("")}`;
}
