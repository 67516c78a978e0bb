import {
  encodeAuditLeaf,
  gapLeaf,
  leafHash,
  MerkleFrontier,
  messageLeafHash,
  type NoteVerifier,
  openCheckpoint,
  parseCheckpoint,
  sameHash,
  toBase64,
} from "@geode/audit";
import type { Names } from "@geode/contracts";
import type { ProjectionDb } from "@geode/projection";
import {
  DeliverPolicy,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
  type StreamInfo,
} from "@nats-io/jetstream";
import type { LogName } from "./audit-options.js";
import { readCheckpoints, readLeafHashes, readStoredLog } from "./audit-tables.js";
import { ProjectionCheck, rowDivergenceText } from "./projection-check.js";
import { readStream } from "./read-stream.js";
import { StoredLeaves } from "./stored-leaves.js";

/** The first thing that does not hold, as `geode audit verify` names it (DESIGN section 20). */
export type Divergence =
  | { kind: "modified" | "reordered"; seq: number }
  | { kind: "deleted"; from_seq: number; to_seq: number }
  | { kind: "truncated"; leaves: number; checkpoint_size: number }
  | { kind: "bad_signature"; checkpoint_size: number }
  | { kind: "row_changed" | "row_deleted"; table: string; stream_seq: number };

/** The one line a divergence is printed as: `modified: seq N`, `deleted: seq N..M`, … */
export function divergenceText(d: Divergence): string {
  switch (d.kind) {
    case "modified":
    case "reordered":
      return `${d.kind}: seq ${d.seq}`;
    case "deleted":
      return `deleted: seq ${d.from_seq}..${d.to_seq}`;
    case "truncated":
      return `truncated: the log has ${d.leaves} leaves, checkpoint says ${d.checkpoint_size}`;
    case "bad_signature":
      return `bad signature: checkpoint of size ${d.checkpoint_size}`;
    case "row_changed":
    case "row_deleted":
      return rowDivergenceText({
        table: d.table,
        streamSeq: d.stream_seq,
        how: d.kind === "row_changed" ? "changed" : "deleted",
      });
  }
}

/** What `verify` found for one log. */
export interface LogVerdict {
  log: LogName;
  origin: string;
  stream: string;
  /** Leaves recomputed: from the retained stream, and the stored hashes of aged-out messages. */
  leaves: number;
  /** Of them, read from the stream. */
  retained: number;
  /** Checkpoints checked (stored, and `--checkpoint`). */
  checkpoints: number;
  /** The root of the recomputed tree, base64. */
  root: string;
  /** The size of the latest checkpoint checked (0: none). */
  checkpoint_size: number;
  projection_rows_checked: boolean;
  divergence?: Divergence;
}

export interface VerifyLogOptions {
  js: JetStreamClient;
  jsm: JetStreamManager;
  names: Names;
  projection: ProjectionDb;
  log: LogName;
  verifier: NoteVerifier;
  /** Checkpoints kept elsewhere (`--checkpoint`), already known to be of this log's origin. */
  extraCheckpoints: string[];
  checkProjection: boolean;
  onProgress?: (done: number, total: number) => void;
}

/** How far around a mismatching leaf a message is looked for at another sequence (reordered). */
const REORDER_WINDOW = 64;
/** At most this many missing sequences are looked for again later in the stream (reordered). */
const MAX_MOVED_LOOKUPS = 1_000;

const GAP_HASH = (seq: number) => leafHash(encodeAuditLeaf(gapLeaf(seq)));

/** True when the stream's limits could have removed its oldest messages (retention: not tampering). */
function mayAgeOut(info: StreamInfo): boolean {
  const c = info.config;
  return (
    (c.max_age ?? 0) > 0 ||
    (c.max_msgs ?? -1) > 0 ||
    (c.max_bytes ?? -1) > 0 ||
    (c.max_msgs_per_subject ?? -1) > 0
  );
}

/** The checkpoint a note claims, read without checking its signature (to name it when the signature fails). */
function claimedSize(note: string, fallback: number): number {
  const at = note.indexOf("\n\n");
  try {
    return parseCheckpoint(note.slice(0, at < 0 ? note.length : at + 1)).size;
  } catch {
    return fallback;
  }
}

/**
 * Verifies one log (DESIGN section 20): every checkpoint's signature; then the stream re-read in
 * order, each message's leaf recomputed and compared with the stored leaf, sequences the stream
 * no longer holds named (a message aged out under the stream's limits is taken from the stored
 * hashes, anything else gone is a deletion); the recomputed tree's root at each checkpoint's size
 * compared with the signed one (so each checkpoint is consistent with the recomputed tree and with
 * the one before it); a checkpoint larger than the log is a truncation.
 */
export async function verifyLog(o: VerifyLogOptions): Promise<LogVerdict> {
  const { names, log, projection } = o;
  const stream = names.auditStream(log);
  const origin = names.auditLog(log);
  const ns = projection.ns;
  const stored = await readStoredLog(projection.root, ns, log);
  let info: StreamInfo | undefined;
  try {
    info = await o.jsm.streams.info(stream);
  } catch (err) {
    if ((err as { code?: number }).code !== 10059 && (err as { status?: number }).status !== 404) throw err;
  }
  const streamFirst = info && info.state.messages > 0 ? info.state.first_seq : Number.POSITIVE_INFINITY;
  const streamLast = info?.state.last_seq ?? 0;
  const firstSeq =
    stored?.firstSeq ?? (info ? (info.state.messages === 0 ? streamLast + 1 : info.state.first_seq) : 1);
  const storedSize = stored?.size ?? 0;

  const verdict: LogVerdict = {
    log,
    origin,
    stream,
    leaves: 0,
    retained: 0,
    checkpoints: 0,
    root: "",
    checkpoint_size: 0,
    projection_rows_checked: o.checkProjection,
  };

  // Signatures first: a checkpoint that is not the key's says nothing about the log.
  const notes = [
    ...(await readCheckpoints(projection.root, ns, log)).map((c) => c.note),
    ...o.extraCheckpoints,
  ];
  const checkpoints: Array<{ size: number; root: Uint8Array }> = [];
  for (const note of notes) {
    try {
      const { checkpoint } = openCheckpoint(note, { verifiers: [o.verifier], origin });
      checkpoints.push({ size: checkpoint.size, root: checkpoint.rootHash });
    } catch {
      verdict.divergence = { kind: "bad_signature", checkpoint_size: claimedSize(note, 0) };
      return verdict;
    }
  }
  checkpoints.sort((a, b) => a.size - b.size);
  verdict.checkpoints = checkpoints.length;
  verdict.checkpoint_size = checkpoints.at(-1)?.size ?? 0;

  const lastSeq = Math.max(streamLast, firstSeq + storedSize - 1);
  const total = Math.max(0, lastSeq - firstSeq + 1);
  const frontier = new MerkleFrontier();
  let nextCheckpoint = 0;
  let divergence: Divergence | undefined;
  const projectionCheck = o.checkProjection
    ? await ProjectionCheck.open(projection, log === "events" ? "events" : "timeline", stream)
    : undefined;

  // Stored leaf hashes (what the notary appended), a chunk at a time, the next one read ahead.
  const storedLeaves = new StoredLeaves(projection.root, ns, log, storedSize);
  const storedLeaf = (index: number): Promise<Uint8Array | undefined> => storedLeaves.leaf(index);

  /** Appends one leaf; at a checkpoint's size, compares the roots. */
  const append = (hash: Uint8Array): void => {
    frontier.appendHash(hash);
    while (nextCheckpoint < checkpoints.length && checkpoints[nextCheckpoint]!.size <= frontier.size) {
      const cp = checkpoints[nextCheckpoint]!;
      if (cp.size === frontier.size && !divergence && !sameHash(frontier.root(), cp.root)) {
        // The stream and the stored tree agree, the signed root does not: the change lies after
        // the checkpoint before (the stored tree was rewritten with it).
        const before = nextCheckpoint > 0 ? checkpoints[nextCheckpoint - 1]!.size : 0;
        divergence = { kind: "modified", seq: firstSeq + before };
      }
      nextCheckpoint++;
    }
  };

  // 1. Sequences before the stream's first retained one: aged out, or removed.
  const headEnd = Math.min(lastSeq + 1, streamFirst);
  if (headEnd > firstSeq) {
    if (!info || !mayAgeOut(info)) {
      divergence = { kind: "deleted", from_seq: firstSeq, to_seq: headEnd - 1 };
    } else {
      for (let seq = firstSeq; seq < headEnd && !divergence; seq++) {
        const hash = await storedLeaf(seq - firstSeq);
        if (!hash || sameHash(hash, GAP_HASH(seq))) {
          let to = seq;
          while (to + 1 < headEnd) {
            const next = await storedLeaf(to + 1 - firstSeq);
            if (next && !sameHash(next, GAP_HASH(to + 1))) break;
            to++;
          }
          divergence = { kind: "deleted", from_seq: seq, to_seq: to };
          break;
        }
        append(hash);
        o.onProgress?.(frontier.size, total);
      }
    }
  }

  // 2. The retained stream, in order.
  const missing = new Map<number, Uint8Array>();
  let pendingDeleted: { from: number; to: number } | undefined;
  if (!divergence && info && info.state.messages > 0) {
    let expected = Math.max(firstSeq, streamFirst);
    const start = { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: expected };
    /** Looks for missing messages further on (moved, not deleted); false when the reading ends. */
    const lookFurther = async (m: JsMsg): Promise<boolean> => {
      if (pendingDeleted) {
        if (movedHere(m) || m.seq >= streamLast) return false;
        return true;
      }
      pendingDeleted = { from: expected, to: m.seq - 1 };
      for (let seq = expected; seq < m.seq && missing.size < MAX_MOVED_LOOKUPS; seq++) {
        const hash = await storedLeaf(seq - firstSeq);
        if (hash && !sameHash(hash, GAP_HASH(seq))) missing.set(seq, hash);
      }
      if (missing.size === 0 || m.seq >= streamLast) return false;
      // This message itself may be the one that moved.
      return !movedHere(m);
    };
    /** True (and the divergence set) when this message is one of the missing ones. */
    const movedHere = (m: JsMsg): boolean => {
      const msgId = m.headers?.get("Nats-Msg-Id") ?? "";
      for (const [seq, hash] of missing) {
        if (sameHash(messageLeafHash({ seq, subject: m.subject, msgId, data: m.data }), hash)) {
          divergence = { kind: "reordered", seq };
          return true;
        }
      }
      return false;
    };
    /** After a message's leaf is appended: false when the reading ends. */
    const appended = (m: JsMsg): boolean => {
      if (projectionCheck?.found) return false;
      o.onProgress?.(frontier.size, total);
      if (divergence) return false;
      expected = m.seq + 1;
      return true;
    };
    // Each message in order; awaits only when its stored chunk is not in yet, on a mismatch, and
    // for the projection check.
    const step = (m: JsMsg): boolean | Promise<boolean> => {
      if (pendingDeleted || m.seq > expected) return lookFurther(m);
      const index = m.seq - firstSeq;
      if (!storedLeaves.has(index)) return storedLeaves.load(index).then(() => step(m));
      const msgId = m.headers?.get("Nats-Msg-Id") ?? "";
      const hash = messageLeafHash({ seq: m.seq, subject: m.subject, msgId, data: m.data });
      const want = storedLeaves.get(index);
      if (want && !sameHash(want, hash)) {
        return movedOrModified(m, index, want).then((moved) => {
          divergence = { kind: moved ? "reordered" : "modified", seq: m.seq };
          return false;
        });
      }
      append(hash);
      verdict.retained++;
      if (projectionCheck)
        return projectionCheck.add({ seq: m.seq, data: m.data, headers: m.headers }).then(() => appended(m));
      return appended(m);
    };
    await readStream(o.js, stream, start, streamLast, step);
    // The newest sequences gone (the stream's last message deleted).
    if (!divergence && !pendingDeleted && !projectionCheck?.found && expected <= streamLast)
      pendingDeleted = { from: expected, to: streamLast };
    if (!divergence && pendingDeleted)
      divergence = { kind: "deleted", from_seq: pendingDeleted.from, to_seq: pendingDeleted.to };
  }

  /** True when the message is the stored leaf of a nearby sequence (it moved). */
  async function movedOrModified(
    m: { seq: number; subject: string; data: Uint8Array; headers?: { get(n: string): string } },
    index: number,
    _want: Uint8Array,
  ): Promise<boolean> {
    const lo = Math.max(0, index - REORDER_WINDOW);
    const hi = Math.min(storedSize, index + REORDER_WINDOW + 1);
    const around = await readLeafHashes(projection.root, ns, log, lo, hi);
    const msgId = m.headers?.get("Nats-Msg-Id") ?? "";
    for (const [i, hash] of around) {
      if (i === index) continue;
      if (sameHash(messageLeafHash({ seq: firstSeq + i, subject: m.subject, msgId, data: m.data }), hash))
        return true;
    }
    return false;
  }

  await projectionCheck?.flush();
  if (!divergence && projectionCheck?.found) {
    const f = projectionCheck.found;
    divergence = {
      kind: f.how === "changed" ? "row_changed" : "row_deleted",
      table: f.table,
      stream_seq: f.streamSeq,
    };
  }
  // 3. A checkpoint the recomputed log does not reach.
  if (!divergence) {
    const beyond = checkpoints.find((c) => c.size > frontier.size);
    if (beyond) divergence = { kind: "truncated", leaves: frontier.size, checkpoint_size: beyond.size };
  }
  verdict.leaves = frontier.size;
  verdict.root = toBase64(frontier.root());
  if (divergence) verdict.divergence = divergence;
  return verdict;
}
