import { createRequire } from "node:module";
import type * as PromClient from "prom-client";

let promClient: typeof PromClient | undefined;
/**
 * prom-client, loaded with the first `ServiceMetrics`: a process that only imports `@geode/bus` (the
 * CLI, an SDK handler, a runtime client) never pays for it (about 40 ms of start-up).
 */
function prom(): typeof PromClient {
  promClient ??= createRequire(import.meta.url)("prom-client") as typeof PromClient;
  return promClient;
}

/** Where the call sites of the services report; a no-op unless the process serves metrics. */
export interface Metrics {
  /** One hook invocation answered by the dispatcher: `ok`, `blocked` or `error`. */
  hookInvocation(hook: string, status: string, seconds: number): void;
  /** One handler call of a chain, with its audited status (`ok`, `block`, `deny`, `error`). */
  handlerCall(hook: string, handler: string, status: string): void;
  /** One `{ns}.tool.execute` reply, by its status (`error` for an error reply). */
  toolCall(tool: string, status: string): void;
  /** How a call that held (or met) a receipt ended: the reply status (`indeterminate`, …). */
  receiptOutcome(outcome: string): void;
  /** One verifier decision, by its `policy_action`. */
  verifyDecision(decision: string): void;
  /** A human approval request started (+1) or ended (-1). */
  approvalPending(delta: 1 | -1): void;
  /** One event or timeline record stored by JetStream. */
  eventPublished(): void;
  /** One event or timeline record given up on. */
  eventPublishFailed(): void;
  /** Rows the recorder inserted into `table`. */
  recorderRows(table: string, rows: number): void;
  /** One projection batch, from its first write attempt to its commit. */
  recorderBatch(stream: string, seconds: number): void;
  /** The process's NATS connection went up (true) or down (false). */
  natsConnected(up: boolean): void;
}

/** What a lag source reports at each scrape: messages the projection is behind, per stream. */
export type LagSource = () => Promise<ReadonlyArray<{ stream: string; lag: number }>>;

const NOOP: Metrics = {
  hookInvocation() {},
  handlerCall() {},
  toolCall() {},
  receiptOutcome() {},
  verifyDecision() {},
  approvalPending() {},
  eventPublished() {},
  eventPublishFailed() {},
  recorderRows() {},
  recorderBatch() {},
  natsConnected() {},
};

/** Hook and handler latency is in the millisecond range; the top buckets cover slow guards. */
const HOOK_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const BATCH_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/**
 * Label children looked up once per label set: prom-client hashes and validates the labels on
 * every `labels()` call, which the hot path (one hook invocation, several handler calls) should
 * not pay again and again.
 */
function children<C>(make: (...labels: string[]) => C): (...labels: string[]) => C {
  const cache = new Map<string, C>();
  return (...labels) => {
    const key = labels.length === 1 ? (labels[0] as string) : labels.join("\u0000");
    let child = cache.get(key);
    if (child === undefined) {
      child = make(...labels);
      cache.set(key, child);
    }
    return child;
  };
}

/**
 * The Prometheus metrics of one service process (docs/operations.md, "Metrics"): one registry,
 * every definition in this class, the process defaults (`process_*`, `nodejs_*`) included.
 */
export class ServiceMetrics implements Metrics {
  readonly registry: PromClient.Registry;
  private lagSource: LagSource | undefined;
  private readonly hookCount;
  private readonly hookSeconds;
  private readonly handlerCount;
  private readonly toolCount;
  private readonly receiptCount;
  private readonly verifyCount;
  private readonly approvals;
  private readonly published;
  private readonly publishFailed;
  private readonly rowsWritten;
  private readonly batchSeconds;
  private readonly nats;

  constructor(options: { defaults?: boolean } = {}) {
    const { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } = prom();
    this.registry = new Registry();
    const registers = [this.registry];
    // The event-loop lag histogram samples every 100 ms instead of prom-client's 10: a timer a
    // hundred times a second woke each idle service for about 7 ms of CPU per second here.
    if (options.defaults !== false)
      collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: 100 });
    const hooks = new Counter({
      name: "geode_hook_invocations_total",
      help: "Hook invocations answered by the hook-dispatcher, by hook and status (ok, blocked, error).",
      labelNames: ["hook", "status"] as const,
      registers,
    });
    this.hookCount = children((hook, status) => hooks.labels(hook as string, status as string));
    const hookSeconds = new Histogram({
      name: "geode_hook_invocation_duration_seconds",
      help: "Time from receiving a hook invocation to its reply, by hook.",
      labelNames: ["hook"] as const,
      buckets: HOOK_BUCKETS,
      registers,
    });
    this.hookSeconds = children((hook) => hookSeconds.labels(hook as string));
    const handlers = new Counter({
      name: "geode_handler_calls_total",
      help: "Hook handler calls, by hook, handler and audited status (ok, block, deny, error).",
      labelNames: ["hook", "handler", "status"] as const,
      registers,
    });
    this.handlerCount = children((hook, handler, status) =>
      handlers.labels(hook as string, handler as string, status as string),
    );
    const tools = new Counter({
      name: "geode_tool_calls_total",
      help: "Tool calls answered by the tool-executor, by tool and reply status.",
      labelNames: ["tool", "status"] as const,
      registers,
    });
    this.toolCount = children((tool, status) => tools.labels(tool as string, status as string));
    const receipts = new Counter({
      name: "geode_receipt_outcomes_total",
      help: "Effectful tool calls with a receipt, by outcome (completed, failed, blocked, replayed, in_progress, indeterminate).",
      labelNames: ["outcome"] as const,
      registers,
    });
    this.receiptCount = children((outcome) => receipts.labels(outcome as string));
    const verify = new Counter({
      name: "geode_verify_decisions_total",
      help: "Verifier decisions, by policy action.",
      labelNames: ["decision"] as const,
      registers,
    });
    this.verifyCount = children((decision) => verify.labels(decision as string));
    this.approvals = new Gauge({
      name: "geode_approvals_pending",
      help: "Human approval requests waiting for an answer in this process.",
      registers,
    });
    this.published = new Counter({
      name: "geode_events_published_total",
      help: "Runtime events and timeline records stored by JetStream.",
      registers,
    });
    this.publishFailed = new Counter({
      name: "geode_event_publish_failures_total",
      help: "Runtime events and timeline records given up on after every publish attempt.",
      registers,
    });
    const rows = new Counter({
      name: "geode_recorder_rows_written_total",
      help: "Projection rows the activity-recorder inserted, by table.",
      labelNames: ["table"] as const,
      registers,
    });
    this.rowsWritten = children((table) => rows.labels(table as string));
    const batch = new Histogram({
      name: "geode_recorder_batch_duration_seconds",
      help: "Time to write one projection batch (its transaction, retries included), by stream.",
      labelNames: ["stream"] as const,
      buckets: BATCH_BUCKETS,
      registers,
    });
    this.batchSeconds = children((stream) => batch.labels(stream as string));
    const lag = this.lagGauge();
    this.registry.registerMetric(lag);
    this.nats = new Gauge({
      name: "geode_nats_connected",
      help: "1 while the process's NATS connection is up, 0 while it reconnects.",
      registers,
    });
  }

  /** The recorder's lag, read from JetStream at each scrape (so it is right between batches too). */
  private lagGauge(): PromClient.Gauge<"stream"> {
    const source = () => this.lagSource;
    return new (prom().Gauge)({
      name: "geode_recorder_lag_messages",
      help: "Messages of a stream not yet applied to the projection: the stream's last sequence minus the recorder's acknowledged sequence.",
      labelNames: ["stream"] as const,
      registers: [],
      async collect() {
        this.reset();
        const read = source();
        if (!read) return;
        for (const { stream, lag } of await read().catch(() => [])) this.labels(stream).set(lag);
      },
    });
  }

  /** Where `geode_recorder_lag_messages` comes from (the activity-recorder sets it). */
  setLagSource(source: LagSource | undefined): void {
    this.lagSource = source;
  }

  hookInvocation(hook: string, status: string, seconds: number): void {
    this.hookCount(hook, status).inc();
    this.hookSeconds(hook).observe(seconds);
  }

  handlerCall(hook: string, handler: string, status: string): void {
    this.handlerCount(hook, handler, status).inc();
  }

  toolCall(tool: string, status: string): void {
    this.toolCount(tool, status).inc();
  }

  receiptOutcome(outcome: string): void {
    this.receiptCount(outcome).inc();
  }

  verifyDecision(decision: string): void {
    this.verifyCount(decision).inc();
  }

  approvalPending(delta: 1 | -1): void {
    this.approvals.inc(delta);
  }

  eventPublished(): void {
    this.published.inc();
  }

  eventPublishFailed(): void {
    this.publishFailed.inc();
  }

  recorderRows(table: string, rows: number): void {
    if (rows > 0) this.rowsWritten(table).inc(rows);
  }

  recorderBatch(stream: string, seconds: number): void {
    this.batchSeconds(stream).observe(seconds);
  }

  natsConnected(up: boolean): void {
    this.nats.set(up ? 1 : 0);
  }
}

let active: Metrics = NOOP;
let enabled: ServiceMetrics | undefined;

/** The process's metrics: the served ones once `enableMetrics` ran, a no-op before. */
export function metrics(): Metrics {
  return active;
}

/** The process's metrics registry, if metrics are on (the recorder adds its lag source to it). */
export function serviceMetrics(): ServiceMetrics | undefined {
  return enabled;
}

/** Turns metrics on for this process (once; later calls return the same registry). */
export function enableMetrics(): ServiceMetrics {
  enabled ??= new ServiceMetrics();
  active = enabled;
  return enabled;
}

/** Turns them off again (benchmarks compare both in one process). */
export function disableMetrics(): void {
  active = NOOP;
  enabled = undefined;
}
