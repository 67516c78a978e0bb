import {
  encodeAuditLeaf,
  gapLeaf,
  leafHash,
  MerkleFrontier,
  messageLeafHash,
  type NoteSigner,
  signCheckpoint,
  type TreeNode,
  toBase64,
} from "@geode/audit";
import type { Logger } from "@geode/bus";
import type { AuditCheckpointMessage, AuditGap, AuditLogName, AuditLogState, Names } from "@geode/contracts";
import { backoffDelay, DEFAULT_RETRY, isConnectionError, type RetryPolicy } from "@geode/projection";
import type { ServiceObserver } from "@geode/service";
import {
  type Consumer,
  DeliverPolicy,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
} from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { type AuditStore, LogMovedError, type StoredLog } from "./audit-store.js";
import type { DbOutage } from "./db-outage.js";
import { CHECKPOINT_MAX_LEAVES } from "./notary-config.js";

export interface LogFollowerOptions {
  log: AuditLogName;
  names: Names;
  nc: NatsConnection;
  js: JetStreamClient;
  jsm: JetStreamManager;
  store: AuditStore;
  signer: NoteSigner;
  batchSize: number;
  checkpointMs: number;
  outage: DbOutage;
  retry?: RetryPolicy;
  /** Where appended leaves and gaps are reported. */
  observer: ServiceObserver;
  logger: Logger;
}

/** How long one fetch waits for messages (the client's floor): a quiet log is looked at each second. */
const FETCH_EXPIRES_MS = 1_000;

/** A batch of leaves appended in memory and not yet committed. */
interface Pending {
  readonly from: StoredLog;
  readonly frontier: MerkleFrontier;
  readonly nodes: TreeNode[];
  lastSeq: number;
  gaps: number;
  /** The gaps of this batch as sequence ranges, published once it is committed. */
  readonly gapRanges: Array<{ from: number; to: number }>;
}

/**
 * Keeps one log's tree while this notary is active: an ordered consumer of its stream from the
 * stored last sequence (never from scratch), each message a leaf (DESIGN section 20), a gap in the
 * sequences a `deleted` leaf per missing sequence and an `audit.gap` message; each batch is one
 * Postgres transaction (audit-store.ts), so a kill at any point neither forks nor repeats a leaf;
 * checkpoints when the log grew, at most every `checkpointMs` and at least every 10,000 leaves.
 */
export class LogFollower {
  #state: StoredLog | undefined;
  #checkpoint: { size: number; signedAt: number } | undefined;
  #unpublished = true;
  #stopping = false;
  #running: Promise<void> | undefined;
  #problem: string | undefined;
  readonly #stream: string;
  readonly #origin: string;

  constructor(private readonly o: LogFollowerOptions) {
    this.#stream = o.names.auditStream(o.log);
    this.#origin = o.names.auditLog(o.log);
  }

  start(): void {
    this.#stopping = false;
    this.#running = this.run();
  }

  /** Stops after the batch being written; what was not committed is read again by the next holder. */
  async stop(): Promise<void> {
    this.#stopping = true;
    await this.#running;
    this.#running = undefined;
  }

  /**
   * While standing by: the stored log and its latest checkpoint, so a standby's health says what
   * the active notary wrote (a health request is answered by whichever replica is first).
   */
  async refresh(): Promise<void> {
    if (this.#running !== undefined) return;
    const [stored, latest] = await Promise.all([
      this.o.store.readLog(this.o.log),
      this.o.store.latestCheckpoint(this.o.log),
    ]);
    if (this.#running !== undefined) return;
    this.#state = stored;
    this.#checkpoint = latest ? { size: latest.size, signedAt: latest.signedAt } : undefined;
  }

  /** Why this log does not advance, when something outside the database stops it (else undefined). */
  get problem(): string | undefined {
    return this.#problem;
  }

  state(now = Date.now()): AuditLogState {
    const s = this.#state;
    return {
      log: this.o.log,
      size: s?.size ?? 0,
      last_seq: Math.max(0, s?.lastSeq ?? 0),
      gaps: s?.gaps ?? 0,
      checkpoint_size: this.#checkpoint?.size ?? 0,
      checkpoint_age_ms: this.#checkpoint ? Math.max(0, now - this.#checkpoint.signedAt) : null,
    };
  }

  /** Seconds since the latest checkpoint, for the metric (undefined before the first). */
  checkpointAgeSeconds(now = Date.now()): number | undefined {
    return this.#checkpoint ? Math.max(0, (now - this.#checkpoint.signedAt) / 1000) : undefined;
  }

  private async run(): Promise<void> {
    const { logger } = this.o;
    for (let attempt = 0; !this.#stopping; attempt++) {
      try {
        await this.follow();
        return;
      } catch (err) {
        if (this.#stopping) return;
        if (err instanceof LogMovedError) logger.warn({ err: err.message }, "audit log moved; reloading");
        else if (isDbError(err)) this.o.outage.failed(err);
        else logger.warn({ err }, "audit log follower failed; restarting");
        await this.sleep(backoffDelay(this.o.retry ?? DEFAULT_RETRY, attempt));
      }
    }
  }

  /** Loads the stored log and follows the stream from after its last sequence until stopped. */
  private async follow(): Promise<void> {
    const { store, log } = this.o;
    const info = await this.o.jsm.streams.info(this.#stream);
    // First start: the tree begins at the stream's first sequence (what retention already took
    // was never seen, and is no part of this log).
    const firstSeq = info.state.messages === 0 ? info.state.last_seq + 1 : info.state.first_seq;
    const stored = await store.openLog(log, { origin: this.#origin, stream: this.#stream, firstSeq });
    this.o.outage.succeeded();
    this.#state = stored;
    if (info.state.last_seq < stored.lastSeq) {
      this.#problem = `stream ${this.#stream} ends at sequence ${info.state.last_seq}, before the audit log's last (${stored.lastSeq}): it was recreated or truncated`;
      this.o.logger.error({ stream: this.#stream }, this.#problem);
    } else {
      this.#problem = undefined;
    }
    const latest = await store.latestCheckpoint(log);
    this.#checkpoint = latest ? { size: latest.size, signedAt: latest.signedAt } : undefined;
    this.o.observer.auditLeaves(log, 0);
    this.o.observer.auditGaps(log, 0);
    const consumer = await this.o.js.consumers.get(this.#stream, {
      deliver_policy: DeliverPolicy.StartSequence,
      opt_start_seq: stored.lastSeq + 1,
    });
    // Each batch is committed while the next one is read (at most one write in flight, so at most
    // two batches in memory); `tip` is the log with every batch read so far, committed or not.
    let tip = stored;
    let want = Math.max(1, info.state.last_seq - stored.lastSeq);
    let writing: Promise<unknown> | undefined;
    const written = async (): Promise<void> => {
      if (!writing) return;
      const err = await writing;
      writing = undefined;
      if (err) throw err;
      await this.maybeCheckpoint();
    };
    try {
      while (!this.#stopping) {
        const batch = await this.fetchBatch(consumer, tip, want);
        await written();
        if (batch) {
          const { pending } = batch;
          tip = {
            ...pending.from,
            size: pending.frontier.size,
            lastSeq: pending.lastSeq,
            gaps: pending.gaps,
            frontier: pending.frontier,
          };
          want = batch.left;
          writing = this.commit(pending).then(
            () => undefined,
            (err: unknown) => err ?? new Error("commit failed"),
          );
        } else {
          await this.maybeCheckpoint();
        }
      }
      await written();
    } catch (err) {
      // Never leave a write behind: the next follow() starts from what it committed.
      await writing;
      throw err;
    }
  }

  /**
   * Up to one batch of leaves from the stream after `from`, in memory; undefined when nothing
   * came. A fetch asks for no more than the stream is known to hold (`want`, what the last message
   * read said was left, at least 1), and the batch goes on with the next fetch while messages
   * are left and it has room: a fetch never waits out its expiry for messages that are not there,
   * so a log that has caught up commits what came at once, and one behind fills whole batches.
   * `left` is what the stream held past the batch's last message.
   */
  private async fetchBatch(
    consumer: Consumer,
    from: StoredLog,
    want: number,
  ): Promise<{ pending: Pending; left: number } | undefined> {
    const sinceCheckpoint = from.size - (this.#checkpoint?.size ?? 0);
    // A batch never carries the log past 10,000 leaves since the last checkpoint.
    const room = Math.max(1, Math.min(this.o.batchSize, CHECKPOINT_MAX_LEAVES - sinceCheckpoint));
    let pending: Pending | undefined;
    const begin = (): Pending => {
      pending ??= {
        from,
        frontier: MerkleFrontier.fromHashes(from.frontier.size, from.frontier.hashes),
        nodes: [],
        lastSeq: from.lastSeq,
        gaps: from.gaps,
        gapRanges: [],
      };
      return pending;
    };
    let taken = 0;
    let left = 0;
    for (let ask = Math.max(1, Math.min(room, want)); ; ask = Math.min(room - taken, left)) {
      const iter = await consumer.fetch({ max_messages: ask, expires: FETCH_EXPIRES_MS });
      let got = 0;
      // Every message of the fetch is taken (at most `room`; gap leaves may add more): the ordered
      // consumer's cursor is past each one delivered, so one left in the fetch would read as a gap.
      for await (const m of iter) {
        got++;
        left = m.info.pending;
        const p = begin();
        if (m.seq <= p.lastSeq) continue; // delivered again after a consumer reset
        this.appendGaps(p, m.seq - 1);
        this.appendMessage(p, m);
        taken++;
        // Stopping: what was taken is a prefix of the stream, committed as one; the rest is dropped
        // with the consumer and read again by the next holder.
        if (this.#stopping) break;
      }
      if (got === 0 || this.#stopping || left <= 0 || taken >= room) break;
    }
    return pending && { pending, left };
  }

  private appendGaps(p: Pending, upTo: number): void {
    if (upTo <= p.lastSeq) return;
    const from = p.lastSeq + 1;
    for (let seq = from; seq <= upTo; seq++)
      for (const n of p.frontier.append(leafHash(encodeAuditLeaf(gapLeaf(seq))))) p.nodes.push(n);
    p.gaps += upTo - from + 1;
    p.gapRanges.push({ from, to: upTo });
    p.lastSeq = upTo;
  }

  private appendMessage(p: Pending, m: JsMsg): void {
    const msgId = m.headers?.get("Nats-Msg-Id") ?? "";
    const leaf = messageLeafHash({ seq: m.seq, subject: m.subject, msgId, data: m.data });
    for (const n of p.frontier.append(leaf)) p.nodes.push(n);
    p.lastSeq = m.seq;
  }

  /** Writes the batch (retried while the database is down), then publishes its gaps. */
  private async commit(p: Pending): Promise<void> {
    const { store, log } = this.o;
    for (let attempt = 0; ; attempt++) {
      try {
        await store.append(
          log,
          p.from,
          { lastSeq: p.lastSeq, gaps: p.gaps, frontier: p.frontier, lastGap: p.gapRanges.at(-1) },
          p.nodes,
        );
        this.o.outage.succeeded();
        break;
      } catch (err) {
        if (!isDbError(err) || this.#stopping) throw err;
        this.o.outage.failed(err);
        await this.sleep(backoffDelay(this.o.retry ?? DEFAULT_RETRY, attempt));
      }
    }
    this.#state = {
      log,
      firstSeq: p.from.firstSeq,
      size: p.frontier.size,
      lastSeq: p.lastSeq,
      gaps: p.gaps,
      frontier: p.frontier,
    };
    this.o.observer.auditLeaves(log, p.frontier.size - p.from.size);
    const gaps = p.gaps - p.from.gaps;
    if (gaps > 0) {
      this.o.observer.auditGaps(log, gaps);
      for (const r of p.gapRanges) {
        const gap: AuditGap = { log, from_seq: r.from, to_seq: r.to };
        this.o.logger.warn(gap, `audit log ${log}: stream sequences ${r.from}..${r.to} are gone (deleted)`);
        this.o.nc.publish(this.o.names.auditGap(log), JSON.stringify(gap));
      }
    }
  }

  /** Signs a checkpoint when the log grew and the interval passed, or 10,000 leaves came. */
  private async maybeCheckpoint(): Promise<void> {
    const s = this.#state!;
    const last = this.#checkpoint;
    const grew = s.size > (last?.size ?? 0);
    const due =
      grew &&
      (last === undefined ||
        Date.now() - last.signedAt >= this.o.checkpointMs ||
        s.size - last.size >= CHECKPOINT_MAX_LEAVES);
    if (due) await this.sign(s);
    if (this.#unpublished) await this.publishStored();
  }

  private async sign(s: StoredLog): Promise<void> {
    const { log, store, signer } = this.o;
    const rootHash = s.frontier.root();
    const signedAt = Date.now();
    const note = signCheckpoint({ origin: this.#origin, size: s.size, rootHash }, signer);
    await store.putCheckpoint({ log, size: s.size, root: toBase64(rootHash), note, signedAt });
    this.#checkpoint = { size: s.size, signedAt };
    this.#unpublished = true;
  }

  /** Publishes the stored checkpoints JetStream does not have yet (deduplicated by `{log}:{size}`). */
  private async publishStored(): Promise<void> {
    const { log, store, js, names } = this.o;
    try {
      for (const c of await store.unpublished(log)) {
        const body: AuditCheckpointMessage = {
          log,
          origin: this.#origin,
          size: c.size,
          root_hash: c.root,
          note: c.note,
          signed_at: c.signedAt,
        };
        await js.publish(names.auditCheckpoint(log), JSON.stringify(body), { msgID: `${log}:${c.size}` });
        await store.markPublished(log, c.size);
      }
      this.#unpublished = false;
    } catch (err) {
      if (isDbError(err)) throw err;
      this.o.logger.warn({ err }, `audit log ${log}: checkpoint not published yet; retrying`);
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((r) => setTimeout(r, ms));
  }
}

/** A failure of the database (connection or statement), as opposed to one of NATS. */
function isDbError(err: unknown): boolean {
  if (isConnectionError(err)) return true;
  const code = (err as { code?: unknown } | undefined)?.code;
  return typeof code === "string" && /^[0-9A-Z]{5}$/.test(code);
}
