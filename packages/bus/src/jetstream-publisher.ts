import { createInbox, type Msg, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import type { PublishInput } from "./interceptors.js";
import { type Logger, silentLogger } from "./logger.js";

export interface JetStreamPublisherOptions {
  nc: NatsConnection;
  log?: Logger;
  /** Publish attempts per message (same `Nats-Msg-Id`, so retries are stored once). Default 3. */
  publishAttempts?: number;
  /** Wait for JetStream's ack before a publish is retried, ms. Default 5,000. */
  ackTimeoutMs?: number;
  /**
   * Hold publishes in an outbox and send them together, in publish order, at the end of this
   * event-loop turn (or `batchDelayMs` later), or at once on `sendQueued()`. A service that answers
   * its caller first and records afterwards keeps the records off the answer's path this way; it
   * calls `sendQueued()` before each step that others can observe, so a record still reaches the
   * stream before that step. Default false.
   */
  batchPublishes?: boolean;
  /**
   * With `batchPublishes`: how long a publish may wait in the outbox, ms. Default 0 (the end of the
   * event-loop turn). A few ms let a busy service send the records of many calls in one write,
   * usually together with its next request.
   */
  batchDelayMs?: number;
}

const ackDecoder = new TextDecoder();

/** A publish waiting for its JetStream ack. */
interface PendingPublish {
  subject: string;
  data: Uint8Array;
  id: string;
  attempts: number;
  sentAt: number;
  /** Its `Nats-Msg-Id`, and what the interceptors added when it was emitted (the trace context). */
  headers: PublishInput["headers"];
  done: (stored: boolean) => void;
}

/**
 * Publishes to JetStream like an async publish: each message goes out with a reply subject on one
 * shared ack inbox, so a hot path pays no per-message request setup or timer, and a sweep re-sends
 * (same `Nats-Msg-Id`, stored once) what was not acked in time. It never throws: a message every
 * attempt failed for resolves false, is logged and counted.
 */
export class JetStreamPublisher {
  private readonly nc: NatsConnection;
  private readonly log: Logger;
  private readonly attempts: number;
  private readonly ackTimeoutMs: number;
  private readonly awaitingAck = new Map<string, PendingPublish>();
  private ackPrefix = "";
  private ackSub: Subscription | undefined;
  private sweeper: ReturnType<typeof setInterval> | undefined;
  private nextToken = 0;
  private readonly batch: boolean;
  private readonly batchDelayMs: number;
  private outbox: Array<[string, PendingPublish]> = [];
  /** Cancels the scheduled send of the outbox; set while one is scheduled. */
  private cancelOutbox: (() => void) | undefined;
  private failures = 0;

  constructor(options: JetStreamPublisherOptions) {
    this.nc = options.nc;
    this.log = options.log ?? silentLogger();
    this.attempts = Math.max(1, options.publishAttempts ?? 3);
    this.ackTimeoutMs = Math.max(50, options.ackTimeoutMs ?? 5_000);
    this.batch = options.batchPublishes === true;
    this.batchDelayMs = Math.max(0, options.batchDelayMs ?? 0);
  }

  /** Messages given up on since start (connection closed, or no ack after every attempt). */
  get publishFailures(): number {
    return this.failures;
  }

  /** Resolves once the stream acked the message (true) or every attempt failed (false). */
  publish({ subject, id, data, headers: h }: PublishInput): Promise<boolean> {
    if (this.nc.isClosed()) {
      this.failures++;
      this.log.warn({ subject, id }, "publish failed: connection closed");
      return Promise.resolve(false);
    }
    this.ensureAckInbox();
    const token = (this.nextToken++).toString(36);
    return new Promise<boolean>((resolve) => {
      const p: PendingPublish = { subject, data, id, attempts: 0, sentAt: 0, headers: h, done: resolve };
      this.awaitingAck.set(token, p);
      if (!this.batch) {
        this.send(token, p);
        return;
      }
      // Sent (and timed for the retry sweep) at the end of this event-loop turn, or later.
      p.sentAt = Date.now();
      this.outbox.push([token, p]);
      if (this.cancelOutbox === undefined) this.cancelOutbox = this.scheduleOutbox();
    });
  }

  /** Sends what the outbox holds now, in publish order, ahead of anything sent next on the connection. */
  sendQueued(): void {
    if (this.outbox.length > 0) this.sendOutbox();
  }

  /** Stops the ack inbox and the sweep (the connection stays open); pending publishes stay unsettled. */
  close(): void {
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = undefined;
    if (this.ackSub && !this.nc.isClosed()) this.ackSub.unsubscribe();
    this.ackSub = undefined;
  }

  private scheduleOutbox(): () => void {
    if (this.batchDelayMs === 0) {
      const immediate = setImmediate(() => this.sendOutbox());
      return () => clearImmediate(immediate);
    }
    const timer = setTimeout(() => this.sendOutbox(), this.batchDelayMs);
    return () => clearTimeout(timer);
  }

  private sendOutbox(): void {
    this.cancelOutbox?.();
    this.cancelOutbox = undefined;
    const out = this.outbox;
    this.outbox = [];
    for (const [token, p] of out) {
      // Acked meanwhile cannot happen (never sent); gone means the sweep gave up on it.
      if (this.awaitingAck.get(token) === p && p.attempts === 0) this.send(token, p);
    }
  }

  private send(token: string, p: PendingPublish): void {
    p.attempts++;
    p.sentAt = Date.now();
    try {
      this.nc.publish(p.subject, p.data, { headers: p.headers, reply: this.ackPrefix + token });
    } catch (err) {
      this.log.debug({ err, subject: p.subject }, "publish not sent; will retry");
    }
  }

  private ensureAckInbox(): void {
    if (this.ackSub) return;
    this.ackPrefix = `${createInbox()}.`;
    this.ackSub = this.nc.subscribe(`${this.ackPrefix}*`, {
      callback: (err, msg) => {
        if (!err) this.onAck(msg);
      },
    });
    this.sweeper = setInterval(() => this.sweep(), Math.min(250, this.ackTimeoutMs));
    this.sweeper.unref?.();
  }

  private onAck(msg: Msg): void {
    const token = msg.subject.slice(this.ackPrefix.length);
    const p = this.awaitingAck.get(token);
    if (!p) return;
    // 503: no stream listens (not provisioned yet, or a cluster election); anything else that is
    // not a PubAck is a store error. Both are retried by the sweep.
    if (msg.headers?.hasError) return;
    let ack: { error?: unknown; seq?: unknown };
    try {
      ack = JSON.parse(ackDecoder.decode(msg.data)) as { error?: unknown; seq?: unknown };
    } catch {
      return;
    }
    if (ack.error !== undefined || typeof ack.seq !== "number") return;
    this.awaitingAck.delete(token);
    p.done(true);
  }

  private sweep(): void {
    const now = Date.now();
    for (const [token, p] of this.awaitingAck) {
      if (p.attempts === 0) continue; // still in the outbox
      if (now - p.sentAt < this.ackTimeoutMs * Math.min(p.attempts, 4)) continue;
      if (p.attempts >= this.attempts || this.nc.isClosed()) {
        this.awaitingAck.delete(token);
        this.failures++;
        this.log.warn(
          { subject: p.subject, id: p.id, attempts: p.attempts },
          "publish failed: no ack from JetStream",
        );
        p.done(false);
      } else {
        this.send(token, p);
      }
    }
  }
}
