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
import { readCheckpoints, readLeafHashes, readStoredLog, type StoredLog } from "./audit-tables.js";
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

/** The log's signed checkpoints, smallest first, or the first whose signature fails. */
function openCheckpoints(
  notes: string[],
  verifier: NoteVerifier,
  origin: string,
): { checkpoints: Checkpoint[] } | { divergence: Divergence } {
  const checkpoints: Checkpoint[] = [];
  for (const note of notes) {
    try {
      const { checkpoint } = openCheckpoint(note, { verifiers: [verifier], origin });
      checkpoints.push({ size: checkpoint.size, root: checkpoint.rootHash });
    } catch {
      return { divergence: { kind: "bad_signature", checkpoint_size: claimedSize(note, 0) } };
    }
  }
  checkpoints.sort((a, b) => a.size - b.size);
  return { checkpoints };
}

/** The stream's info, or undefined when the stream does not exist. */
async function streamInfo(jsm: JetStreamManager, stream: string): Promise<StreamInfo | undefined> {
  try {
    return await jsm.streams.info(stream);
  } catch (err) {
    if ((err as { code?: number }).code !== 10059 && (err as { status?: number }).status !== 404) throw err;
    return undefined;
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
  const stored = await readStoredLog(projection.root, projection.ns, log);
  const info = await streamInfo(o.jsm, stream);
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
    ...(await readCheckpoints(projection.root, projection.ns, log)).map((c) => c.note),
    ...o.extraCheckpoints,
  ];
  const opened = openCheckpoints(notes, o.verifier, origin);
  if ("divergence" in opened) {
    verdict.divergence = opened.divergence;
    return verdict;
  }
  const { checkpoints } = opened;
  verdict.checkpoints = checkpoints.length;
  verdict.checkpoint_size = checkpoints.at(-1)?.size ?? 0;

  const projectionCheck = o.checkProjection
    ? await ProjectionCheck.open(projection, log === "events" ? "events" : "timeline", stream)
    : undefined;
  const replay = new LogReplay({ ...o, stream, info, stored, checkpoints, projectionCheck });
  await replay.run();
  verdict.leaves = replay.frontier.size;
  verdict.retained = replay.retained;
  verdict.root = toBase64(replay.frontier.root());
  if (replay.divergence) verdict.divergence = replay.divergence;
  return verdict;
}

interface Checkpoint {
  size: number;
  root: Uint8Array;
}

interface LogReplayOptions {
  js: JetStreamClient;
  projection: ProjectionDb;
  log: LogName;
  stream: string;
  info: StreamInfo | undefined;
  stored: StoredLog | undefined;
  checkpoints: Checkpoint[];
  projectionCheck: ProjectionCheck | undefined;
  onProgress?: (done: number, total: number) => void;
}

/**
 * One log's tree recomputed in sequence order, in stages: the sequences before the stream's first
 * retained one (aged out, or removed), the retained stream, then the projection's rows and the
 * checkpoints the recomputed log does not reach. The first divergence found ends it.
 */
class LogReplay {
  readonly frontier = new MerkleFrontier();
  divergence: Divergence | undefined;
  /** Leaves read from the stream. */
  retained = 0;
  private readonly firstSeq: number;
  private readonly streamFirst: number;
  private readonly streamLast: number;
  private readonly storedSize: number;
  private readonly lastSeq: number;
  private readonly total: number;
  /** Stored leaf hashes (what the notary appended), a chunk at a time, the next one read ahead. */
  private readonly storedLeaves: StoredLeaves;
  private nextCheckpoint = 0;
  /** The next sequence the stream should deliver. */
  private expected = 0;
  /** Stored leaves of sequences the stream skipped, looked for further on (moved, not deleted). */
  private readonly missing = new Map<number, Uint8Array>();
  private pendingDeleted: { from: number; to: number } | undefined;

  constructor(private readonly o: LogReplayOptions) {
    const { info, stored } = o;
    this.streamFirst = info && info.state.messages > 0 ? info.state.first_seq : Number.POSITIVE_INFINITY;
    this.streamLast = info?.state.last_seq ?? 0;
    this.firstSeq =
      stored?.firstSeq ??
      (info ? (info.state.messages === 0 ? this.streamLast + 1 : info.state.first_seq) : 1);
    this.storedSize = stored?.size ?? 0;
    this.lastSeq = Math.max(this.streamLast, this.firstSeq + this.storedSize - 1);
    this.total = Math.max(0, this.lastSeq - this.firstSeq + 1);
    this.storedLeaves = new StoredLeaves(o.projection.root, o.projection.ns, o.log, this.storedSize);
  }

  async run(): Promise<void> {
    await this.replayHead();
    if (!this.divergence && this.o.info && this.o.info.state.messages > 0) await this.replayStream();
    const check = this.o.projectionCheck;
    await check?.flush();
    if (!this.divergence && check?.found) {
      const f = check.found;
      this.divergence = {
        kind: f.how === "changed" ? "row_changed" : "row_deleted",
        table: f.table,
        stream_seq: f.streamSeq,
      };
    }
    // A checkpoint the recomputed log does not reach.
    if (!this.divergence) {
      const beyond = this.o.checkpoints.find((c) => c.size > this.frontier.size);
      if (beyond)
        this.divergence = { kind: "truncated", leaves: this.frontier.size, checkpoint_size: beyond.size };
    }
  }

  private storedLeaf(index: number): Promise<Uint8Array | undefined> {
    return this.storedLeaves.leaf(index);
  }

  /** Appends one leaf; at a checkpoint's size, compares the roots. */
  private append(hash: Uint8Array): void {
    const { checkpoints } = this.o;
    this.frontier.appendHash(hash);
    while (
      this.nextCheckpoint < checkpoints.length &&
      checkpoints[this.nextCheckpoint]!.size <= this.frontier.size
    ) {
      const cp = checkpoints[this.nextCheckpoint]!;
      if (cp.size === this.frontier.size && !this.divergence && !sameHash(this.frontier.root(), cp.root)) {
        // The stream and the stored tree agree, the signed root does not: the change lies after
        // the checkpoint before (the stored tree was rewritten with it).
        const before = this.nextCheckpoint > 0 ? checkpoints[this.nextCheckpoint - 1]!.size : 0;
        this.divergence = { kind: "modified", seq: this.firstSeq + before };
      }
      this.nextCheckpoint++;
    }
  }

  /** Sequences before the stream's first retained one: aged out (from the stored hashes), or removed. */
  private async replayHead(): Promise<void> {
    const { firstSeq, o } = this;
    const headEnd = Math.min(this.lastSeq + 1, this.streamFirst);
    if (headEnd <= firstSeq) return;
    if (!o.info || !mayAgeOut(o.info)) {
      this.divergence = { kind: "deleted", from_seq: firstSeq, to_seq: headEnd - 1 };
      return;
    }
    for (let seq = firstSeq; seq < headEnd && !this.divergence; seq++) {
      const hash = await this.storedLeaf(seq - firstSeq);
      if (!hash || sameHash(hash, GAP_HASH(seq))) {
        let to = seq;
        while (to + 1 < headEnd) {
          const next = await this.storedLeaf(to + 1 - firstSeq);
          if (next && !sameHash(next, GAP_HASH(to + 1))) break;
          to++;
        }
        this.divergence = { kind: "deleted", from_seq: seq, to_seq: to };
        return;
      }
      this.append(hash);
      o.onProgress?.(this.frontier.size, this.total);
    }
  }

  /** The retained stream, in order. */
  private async replayStream(): Promise<void> {
    this.expected = Math.max(this.firstSeq, this.streamFirst);
    const start = { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: this.expected };
    await readStream(this.o.js, this.o.stream, start, this.streamLast, this.step);
    // The newest sequences gone (the stream's last message deleted).
    if (
      !this.divergence &&
      !this.pendingDeleted &&
      !this.o.projectionCheck?.found &&
      this.expected <= this.streamLast
    )
      this.pendingDeleted = { from: this.expected, to: this.streamLast };
    if (!this.divergence && this.pendingDeleted)
      this.divergence = {
        kind: "deleted",
        from_seq: this.pendingDeleted.from,
        to_seq: this.pendingDeleted.to,
      };
  }

  /**
   * Each message in order; awaits only when its stored chunk is not in yet, on a mismatch, and
   * for the projection check. False when the reading ends.
   */
  private readonly step = (m: JsMsg): boolean | Promise<boolean> => {
    if (this.pendingDeleted || m.seq > this.expected) return this.lookFurther(m);
    const index = m.seq - this.firstSeq;
    if (!this.storedLeaves.has(index)) return this.storedLeaves.load(index).then(() => this.step(m));
    const msgId = m.headers?.get("Nats-Msg-Id") ?? "";
    const hash = messageLeafHash({ seq: m.seq, subject: m.subject, msgId, data: m.data });
    const want = this.storedLeaves.get(index);
    if (want && !sameHash(want, hash)) {
      return this.movedNearby(m, index).then((moved) => {
        this.divergence = { kind: moved ? "reordered" : "modified", seq: m.seq };
        return false;
      });
    }
    this.append(hash);
    this.retained++;
    const check = this.o.projectionCheck;
    if (check)
      return check.add({ seq: m.seq, data: m.data, headers: m.headers }).then(() => this.appended(m));
    return this.appended(m);
  };

  /** After a message's leaf is appended: false when the reading ends. */
  private appended(m: JsMsg): boolean {
    if (this.o.projectionCheck?.found) return false;
    this.o.onProgress?.(this.frontier.size, this.total);
    if (this.divergence) return false;
    this.expected = m.seq + 1;
    return true;
  }

  /** Looks for missing messages further on (moved, not deleted); false when the reading ends. */
  private async lookFurther(m: JsMsg): Promise<boolean> {
    if (this.pendingDeleted) {
      if (this.movedHere(m) || m.seq >= this.streamLast) return false;
      return true;
    }
    this.pendingDeleted = { from: this.expected, to: m.seq - 1 };
    for (let seq = this.expected; seq < m.seq && this.missing.size < MAX_MOVED_LOOKUPS; seq++) {
      const hash = await this.storedLeaf(seq - this.firstSeq);
      if (hash && !sameHash(hash, GAP_HASH(seq))) this.missing.set(seq, hash);
    }
    if (this.missing.size === 0 || m.seq >= this.streamLast) return false;
    // This message itself may be the one that moved.
    return !this.movedHere(m);
  }

  /** True (and the divergence set) when this message is one of the missing ones. */
  private movedHere(m: JsMsg): boolean {
    const msgId = m.headers?.get("Nats-Msg-Id") ?? "";
    for (const [seq, hash] of this.missing) {
      if (sameHash(messageLeafHash({ seq, subject: m.subject, msgId, data: m.data }), hash)) {
        this.divergence = { kind: "reordered", seq };
        return true;
      }
    }
    return false;
  }

  /** True when the message is the stored leaf of a nearby sequence (it moved). */
  private async movedNearby(m: JsMsg, index: number): Promise<boolean> {
    const { projection, log } = this.o;
    const lo = Math.max(0, index - REORDER_WINDOW);
    const hi = Math.min(this.storedSize, index + REORDER_WINDOW + 1);
    const around = await readLeafHashes(projection.root, projection.ns, log, lo, hi);
    const msgId = m.headers?.get("Nats-Msg-Id") ?? "";
    for (const [i, hash] of around) {
      if (i === index) continue;
      const leaf = messageLeafHash({ seq: this.firstSeq + i, subject: m.subject, msgId, data: m.data });
      if (sameHash(leaf, hash)) return true;
    }
    return false;
  }
}
