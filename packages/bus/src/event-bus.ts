import { randomUUID } from "node:crypto";
import {
  type Correlation,
  type CorrelationInput,
  type EventEnvelope,
  correlation as fillCorrelation,
  type Names,
  type RuntimeEvent,
  sanitizePayload,
  sha256,
  type TimelineKind,
  type TimelineRecord,
} from "@geode/contracts";
import {
  createInbox,
  headers,
  type Msg,
  type MsgHdrs,
  type NatsConnection,
  type Subscription,
} from "@nats-io/transport-node";
import { encodeJson } from "./codec.js";
import { compose, interceptorsOf, type Next, type PublishInput } from "./interceptors.js";
import { type Logger, silentLogger } from "./logger.js";
import { ensureEventStreams, type StreamOptions } from "./provision.js";

export type EventObserver = (event: EventEnvelope) => void | Promise<void>;
export type TimelineObserver = (record: TimelineRecord) => void | Promise<void>;

export interface RuntimeEventBusOptions {
  nc: NatsConnection;
  names: Names;
  /** Who publishes (`hook-dispatcher`, `runtime`, …); stored in every envelope. */
  source: string;
  log?: Logger;
  /** Provision the streams on create (default true). */
  provision?: boolean;
  streams?: StreamOptions;
  /** Publish attempts per message (same `Nats-Msg-Id`, so retries are stored once). Default 3. */
  publishAttempts?: number;
  /** Wait for JetStream's ack before a publish is retried, ms. Default 5,000. */
  ackTimeoutMs?: number;
  /**
   * Hold publishes in an outbox and send them together, in emit order, at the end of this
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
  headers: MsgHdrs;
  done: (stored: boolean) => void;
}

/**
 * Observation surface: publishes each RuntimeEvent as one JetStream message and each timeline
 * record likewise, and fans them out to in-process observers as isolated deep copies. Nothing it
 * does can throw into the caller's control flow: failures are logged.
 */
export class RuntimeEventBus {
  readonly names: Names;
  readonly source: string;
  private readonly nc: NatsConnection;
  private readonly log: Logger;
  private readonly attempts: number;
  private readonly ackTimeoutMs: number;
  private readonly awaitingAck = new Map<string, PendingPublish>();
  private ackPrefix = "";
  private ackSub: Subscription | undefined;
  private sweeper: ReturnType<typeof setInterval> | undefined;
  private nextToken = 0;
  private readonly eventObservers = new Set<EventObserver>();
  private readonly timelineObservers = new Set<TimelineObserver>();
  private readonly pending = new Set<Promise<unknown>>();
  private readonly batch: boolean;
  private readonly batchDelayMs: number;
  private outbox: Array<[string, PendingPublish]> = [];
  /** Cancels the scheduled send of the outbox; set while one is scheduled. */
  private cancelOutbox: (() => void) | undefined;
  private failures = 0;
  /** A publish through the connection's interceptors (see `useInterceptors`). */
  private readonly published: Next<PublishInput, Promise<boolean>>;

  private constructor(options: RuntimeEventBusOptions) {
    this.nc = options.nc;
    this.names = options.names;
    this.source = options.source;
    this.log = options.log ?? silentLogger();
    this.attempts = Math.max(1, options.publishAttempts ?? 3);
    this.ackTimeoutMs = Math.max(50, options.ackTimeoutMs ?? 5_000);
    this.batch = options.batchPublishes === true;
    this.batchDelayMs = Math.max(0, options.batchDelayMs ?? 0);
    this.published = compose(interceptorsOf(this.nc), "publish", (input) => this.store(input));
  }

  /** Creates the bus and (by default) provisions `{NS}_EVENTS` and `{NS}_TIMELINE`. */
  static async create(options: RuntimeEventBusOptions): Promise<RuntimeEventBus> {
    if (options.provision !== false) await ensureEventStreams(options.nc, options.names, options.streams);
    return new RuntimeEventBus(options);
  }

  /** Publish failures since start (for health and tests). */
  get publishFailures(): number {
    return this.failures;
  }

  /** Builds the envelope of an event (sanitized payload, fresh id). */
  envelope(
    event: RuntimeEvent,
    payload: unknown,
    correlation: CorrelationInput | Correlation = {},
    id?: string,
  ): EventEnvelope {
    return {
      id: id ?? randomUUID(),
      event,
      ts: Date.now(),
      source: this.source,
      correlation: fillCorrelation(correlation),
      payload: sanitizePayload(payload),
    };
  }

  /**
   * Publishes one event and resolves with its envelope once JetStream stored it, or null if it
   * could not be stored (logged). Never rejects.
   */
  emit(
    event: RuntimeEvent,
    payload: unknown,
    correlation: CorrelationInput | Correlation = {},
    options: { id?: string } = {},
  ): Promise<EventEnvelope | null> {
    let env: EventEnvelope;
    try {
      env = this.envelope(event, payload, correlation, options.id);
    } catch (err) {
      this.failed();
      this.log.warn({ err, event }, "event not published: bad envelope");
      return Promise.resolve(null);
    }
    this.notify(this.eventObservers, env);
    return this.track(this.publish(this.names.event(event), env.id, env).then((ok) => (ok ? env : null)));
  }

  /**
   * Publishes one session timeline record; never rejects. `id` (default a new UUID) is also its
   * `Nats-Msg-Id`: a record published twice with one id is stored once.
   */
  timeline(
    kind: TimelineKind,
    payload: unknown,
    correlation: CorrelationInput | Correlation = {},
    options: { id?: string } = {},
  ): Promise<TimelineRecord | null> {
    let rec: TimelineRecord;
    try {
      const clean = sanitizePayload(payload);
      rec = {
        id: options.id ?? randomUUID(),
        kind,
        ts: Date.now(),
        source: this.source,
        correlation: fillCorrelation(correlation),
        payload: clean,
        payload_sha256: sha256(clean),
      };
    } catch (err) {
      this.failed();
      this.log.warn({ err, kind }, "timeline record not published: bad envelope");
      return Promise.resolve(null);
    }
    this.notify(this.timelineObservers, rec);
    return this.track(this.publish(this.names.timeline(kind), rec.id, rec).then((ok) => (ok ? rec : null)));
  }

  /** Adds an in-process observer of events; returns the unsubscribe function. */
  subscribe(observer: EventObserver): () => void {
    this.eventObservers.add(observer);
    return () => this.eventObservers.delete(observer);
  }

  /** Adds an in-process observer of timeline records; returns the unsubscribe function. */
  subscribeTimeline(observer: TimelineObserver): () => void {
    this.timelineObservers.add(observer);
    return () => this.timelineObservers.delete(observer);
  }

  /**
   * Sends what the outbox holds now (with `batchPublishes`), in emit order and ahead of anything
   * the caller sends next on the same connection: call it before a step that others can observe.
   */
  sendQueued(): void {
    if (this.outbox.length > 0) this.sendOutbox();
  }

  /** Sends the outbox, then waits until every publish started so far has settled. */
  async flush(): Promise<void> {
    this.sendQueued();
    while (this.pending.size > 0) await Promise.allSettled([...this.pending]);
  }

  private failed(): void {
    this.failures++;
  }

  private track<T>(p: Promise<T>): Promise<T> {
    this.pending.add(p);
    void p.finally(() => this.pending.delete(p));
    return p;
  }

  private notify<T>(observers: Set<(v: T) => void | Promise<void>>, value: T): void {
    for (const observer of observers) {
      try {
        // Each observer gets its own deep copy: it can change neither the published message nor
        // what the next observer sees.
        const result = observer(structuredClone(value));
        if (result instanceof Promise)
          result.catch((err: unknown) => this.log.warn({ err }, "observer failed"));
      } catch (err) {
        this.log.warn({ err }, "observer failed");
      }
    }
  }

  /** Publishes one message through the connection's interceptors (see `store`). */
  private publish(subject: string, id: string, body: unknown): Promise<boolean> {
    const h = headers();
    h.set("Nats-Msg-Id", id);
    return this.published({ subject, id, data: encodeJson(body), headers: h });
  }

  /**
   * Publishes to JetStream and resolves once the stream acked it (true) or every attempt failed
   * (false). Like an async publish: the message goes out with a reply subject on one shared ack
   * inbox, so a hot path pays no per-message request setup or timer; a sweep re-sends
   * (same `Nats-Msg-Id`, stored once) what was not acked in time.
   */
  private store({ subject, id, data, headers: h }: PublishInput): Promise<boolean> {
    if (this.nc.isClosed()) {
      this.failed();
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
        this.failed();
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

  /** Waits for pending publishes, then stops the ack inbox (the connection stays open). */
  async close(): Promise<void> {
    await this.flush();
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = undefined;
    if (this.ackSub && !this.nc.isClosed()) this.ackSub.unsubscribe();
    this.ackSub = undefined;
  }
}
