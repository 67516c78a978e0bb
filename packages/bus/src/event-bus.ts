import {
  type Correlation,
  type CorrelationInput,
  type EventEnvelope,
  eventEnvelope,
  type Names,
  type RuntimeEvent,
  type TimelineKind,
  type TimelineRecord,
  timelineRecord,
} from "@geode/contracts";
import { headers } from "@nats-io/transport-node";
import { encodeJson } from "./codec.js";
import { type BusConnection, busParts, compose, type Next, type PublishInput } from "./interceptors.js";
import { JetStreamPublisher, type JetStreamPublisherOptions } from "./jetstream-publisher.js";
import { type Logger, silentLogger } from "./logger.js";
import { ensureEventStreams, type StreamOptions } from "./provision.js";

export type EventObserver = (event: EventEnvelope) => void | Promise<void>;
export type TimelineObserver = (record: TimelineRecord) => void | Promise<void>;

/** The bus's own options, and its publisher's retries and outbox (see JetStreamPublisherOptions). */
export interface RuntimeEventBusOptions extends Omit<JetStreamPublisherOptions, "nc" | "log"> {
  /** Its publishes run through the interceptors of an `InterceptedConnection` (a service's `bus`). */
  nc: BusConnection;
  names: Names;
  /** Who publishes (`hook-dispatcher`, `runtime`, …); stored in every envelope. */
  source: string;
  log?: Logger;
  /** Provision the streams on create (default true). */
  provision?: boolean;
  streams?: StreamOptions;
}

/**
 * Observation surface: publishes each RuntimeEvent as one JetStream message and each timeline
 * record likewise (envelopes from contracts' event-envelope.ts, sent by a JetStreamPublisher
 * through the connection's interceptors), and fans them out to in-process observers as isolated
 * deep copies. Nothing it does can throw into the caller's control flow: failures are logged.
 */
export class RuntimeEventBus {
  readonly names: Names;
  readonly source: string;
  private readonly log: Logger;
  private readonly publisher: JetStreamPublisher;
  private readonly eventObservers = new Set<EventObserver>();
  private readonly timelineObservers = new Set<TimelineObserver>();
  private readonly pending = new Set<Promise<unknown>>();
  /** Events and records whose envelope could not be built (never published). */
  private badEnvelopes = 0;
  /** A publish through the connection's interceptors (see `BusConnection`). */
  private readonly published: Next<PublishInput, Promise<boolean>>;

  private constructor(options: RuntimeEventBusOptions) {
    this.names = options.names;
    this.source = options.source;
    this.log = options.log ?? silentLogger();
    const { nc, interceptors } = busParts(options.nc);
    this.publisher = new JetStreamPublisher({ ...options, nc, log: this.log });
    this.published = compose(interceptors, "publish", (input) => this.publisher.publish(input));
  }

  /** Creates the bus and (by default) provisions `{NS}_EVENTS` and `{NS}_TIMELINE`. */
  static async create(options: RuntimeEventBusOptions): Promise<RuntimeEventBus> {
    if (options.provision !== false)
      await ensureEventStreams(busParts(options.nc).nc, options.names, options.streams);
    return new RuntimeEventBus(options);
  }

  /** Publish failures since start (for health and tests). */
  get publishFailures(): number {
    return this.badEnvelopes + this.publisher.publishFailures;
  }

  /** Builds the envelope of an event (sanitized payload, fresh id). */
  envelope(
    event: RuntimeEvent,
    payload: unknown,
    correlation: CorrelationInput | Correlation = {},
    id?: string,
  ): EventEnvelope {
    return eventEnvelope({ kind: event, source: this.source, payload, correlation, id });
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
      this.badEnvelopes++;
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
      rec = timelineRecord({ kind, source: this.source, payload, correlation, id: options.id });
    } catch (err) {
      this.badEnvelopes++;
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
    this.publisher.sendQueued();
  }

  /** Sends the outbox, then waits until every publish started so far has settled. */
  async flush(): Promise<void> {
    this.sendQueued();
    while (this.pending.size > 0) await Promise.allSettled([...this.pending]);
  }

  /** Waits for pending publishes, then stops the ack inbox (the connection stays open). */
  async close(): Promise<void> {
    await this.flush();
    this.publisher.close();
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

  /** Publishes one message, its id as `Nats-Msg-Id`, through the connection's interceptors. */
  private publish(subject: string, id: string, body: unknown): Promise<boolean> {
    const h = headers();
    h.set("Nats-Msg-Id", id);
    return this.published({ subject, id, data: encodeJson(body), headers: h });
  }
}
