import { createRequire } from "node:module";
import type { CheckpointAgeSource, LagSource } from "@geode/service";
import type * as PromClient from "prom-client";

let promClient: typeof PromClient | undefined;
/**
 * prom-client, loaded with the first `ServiceMetrics`: a process that only imports `@geode/bus` (the
 * CLI, an SDK handler, a runtime client) never pays its start-up.
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
  /** One policy-guard evaluation: its hook, the enforced decision (`none` without one) and the mode that decided. */
  policyDecision(hook: string, decision: string, mode: string): void;
  /** A tool result reached the agent gateway for a call whose PreToolUse it never saw. */
  governanceGap(agentKind: string): void;
  /** The agent kinds a gateway serves: their gap counters are exported at 0 until a gap. */
  governanceGapKinds(agentKinds: readonly string[]): void;
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
  /** Messages of `stream` PostgreSQL refused for their content, kept in `quarantined_messages` (0: the series starts). */
  recorderQuarantined(stream: string, messages: number): void;
  /** Leaves the notary appended to `log`'s tree (gap leaves included; 0: the series starts). */
  auditLeaves(log: string, leaves: number): void;
  /** Gap leaves (deleted stream messages) the notary appended to `log`'s tree (0: the series starts). */
  auditGaps(log: string, gaps: number): void;
  /** The process's NATS connection went up (true) or down (false). */
  natsConnected(up: boolean): void;
}

const NOOP: Metrics = {
  hookInvocation() {},
  handlerCall() {},
  toolCall() {},
  receiptOutcome() {},
  verifyDecision() {},
  policyDecision() {},
  governanceGap() {},
  governanceGapKinds() {},
  approvalPending() {},
  eventPublished() {},
  eventPublishFailed() {},
  recorderRows() {},
  recorderBatch() {},
  recorderQuarantined() {},
  auditLeaves() {},
  auditGaps() {},
  natsConnected() {},
};

/** Hook and handler latency is in the millisecond range; the top buckets cover slow guards. */
const HOOK_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const BATCH_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** Observations a histogram's label set holds at most before they go to prom-client. */
const MAX_PENDING_OBSERVATIONS = 256;

/** One label set's updates, held as plain numbers until its metric is collected. */
class Pending {
  count = 0;
  /** Whether the label set reached its counter: a set is exported (at 0 if need be) once it exists. */
  private exported = false;
  readonly values: number[] = [];

  constructor(
    readonly labels: Record<string, string>,
    private readonly histogram: PromClient.Histogram<string> | undefined,
  ) {}

  inc(by = 1): void {
    this.count += by;
  }

  observe(value: number): void {
    this.values.push(value);
    if (this.values.length >= MAX_PENDING_OBSERVATIONS) this.drain();
  }

  /** Moves what is held into `counter` (a counter's collect) or the histogram. */
  drain(counter?: PromClient.Counter<string>): void {
    if (counter && (this.count !== 0 || !this.exported)) {
      counter.inc(this.labels, this.count);
      this.exported = true;
    }
    this.count = 0;
    if (this.histogram) for (const v of this.values) this.histogram.observe(this.labels, v);
    this.values.length = 0;
  }
}

/**
 * The label sets of one counter or histogram, found in nested maps by their values. prom-client
 * hashes and validates the labels on every update, a noticeable share of a hook invocation's CPU;
 * a label set looked up here and a number added to is a fraction of that. The metric's collect (each scrape, each `registry.metrics()`) moves what is pending into it first,
 * so every read sees exact totals.
 */
class LabelSets {
  private readonly root = new Map<string, unknown>();
  private readonly all: Pending[] = [];

  constructor(
    private readonly names: readonly string[],
    private readonly histogram?: PromClient.Histogram<string>,
  ) {}

  get(...values: string[]): Pending {
    let node = this.root;
    const last = values.length - 1;
    for (let i = 0; i < last; i++) {
      const key = values[i] as string;
      let next = node.get(key) as Map<string, unknown> | undefined;
      if (next === undefined) {
        next = new Map();
        node.set(key, next);
      }
      node = next;
    }
    const key = last < 0 ? "" : (values[last] as string);
    let pending = node.get(key) as Pending | undefined;
    if (pending === undefined) {
      const labels = Object.fromEntries(this.names.map((name, i) => [name, values[i] as string]));
      pending = new Pending(labels, this.histogram);
      node.set(key, pending);
      this.all.push(pending);
    }
    return pending;
  }

  /** Moves every label set's pending updates into the metric. */
  drain(counter?: PromClient.Counter<string>): void {
    for (const pending of this.all) pending.drain(counter);
  }
}

/** A counter whose updates go through `LabelSets` (see there). */
function pendingCounter(
  config: Omit<PromClient.CounterConfiguration<string>, "collect">,
): (...labels: string[]) => Pending {
  const sets = new LabelSets(config.labelNames ?? []);
  new (prom().Counter)({
    ...config,
    collect() {
      sets.drain(this);
    },
  });
  return (...labels) => sets.get(...labels);
}

/** A histogram whose observations go through `LabelSets` (see there). */
function pendingHistogram(
  config: Omit<PromClient.HistogramConfiguration<string>, "collect">,
): (...labels: string[]) => Pending {
  const histogram = new (prom().Histogram)({
    ...config,
    collect() {
      sets.drain();
    },
  });
  const sets = new LabelSets(config.labelNames ?? [], histogram);
  return (...labels) => sets.get(...labels);
}

/**
 * The Prometheus metrics of one service process (docs/operations.md, "Metrics"): one registry,
 * every definition in this class, the process defaults (`process_*`, `nodejs_*`) included.
 */
export class ServiceMetrics implements Metrics {
  readonly registry: PromClient.Registry;
  private lagSource: LagSource | undefined;
  private checkpointAgeSource: CheckpointAgeSource | undefined;
  private readonly hookCount;
  private readonly hookSeconds;
  private readonly handlerCount;
  private readonly toolCount;
  private readonly receiptCount;
  private readonly verifyCount;
  private readonly policyCount;
  private readonly gapCount;
  private readonly approvals;
  private readonly published;
  private readonly publishFailed;
  private readonly rowsWritten;
  private readonly batchSeconds;
  private readonly quarantined;
  private readonly auditLeafCount;
  private readonly auditGapCount;
  private readonly nats;

  constructor(options: { defaults?: boolean } = {}) {
    const { collectDefaultMetrics, Gauge, Registry } = prom();
    this.registry = new Registry();
    const registers = [this.registry];
    // The event-loop lag histogram samples every 100 ms instead of prom-client's 10: a timer a
    // hundred times a second kept waking each idle service.
    if (options.defaults !== false)
      collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: 100 });
    this.hookCount = pendingCounter({
      name: "geode_hook_invocations_total",
      help: "Hook invocations answered by the hook-dispatcher, by hook and status (ok, blocked, error).",
      labelNames: ["hook", "status"] as const,
      registers,
    });
    this.hookSeconds = pendingHistogram({
      name: "geode_hook_invocation_duration_seconds",
      help: "Time from receiving a hook invocation to its reply, by hook.",
      labelNames: ["hook"] as const,
      buckets: HOOK_BUCKETS,
      registers,
    });
    this.handlerCount = pendingCounter({
      name: "geode_handler_calls_total",
      help: "Hook handler calls, by hook, handler and audited status (ok, block, deny, error).",
      labelNames: ["hook", "handler", "status"] as const,
      registers,
    });
    this.toolCount = pendingCounter({
      name: "geode_tool_calls_total",
      help: "Tool calls answered by the tool-executor, by tool and reply status.",
      labelNames: ["tool", "status"] as const,
      registers,
    });
    this.receiptCount = pendingCounter({
      name: "geode_receipt_outcomes_total",
      help: "Effectful tool calls with a receipt, by outcome (completed, failed, blocked, replayed, in_progress, indeterminate).",
      labelNames: ["outcome"] as const,
      registers,
    });
    this.verifyCount = pendingCounter({
      name: "geode_verify_decisions_total",
      help: "Verifier decisions, by policy action.",
      labelNames: ["decision"] as const,
      registers,
    });
    this.policyCount = pendingCounter({
      name: "geode_policy_decisions_total",
      help: "Policy-guard evaluations, by hook, decision (block, deny, request_permission, ask, none) and the mode of the sets that decided (enforce, audit, none).",
      labelNames: ["hook", "decision", "mode"] as const,
      registers,
    });
    this.gapCount = pendingCounter({
      name: "geode_governance_gaps_total",
      help: "Tool results that reached the agent gateway for a call whose PreToolUse it never saw (a call nobody governed), by agent kind.",
      labelNames: ["agent_kind"] as const,
      registers,
    });
    this.approvals = new Gauge({
      name: "geode_approvals_pending",
      help: "Human approval requests waiting for an answer in this process.",
      registers,
    });
    this.published = pendingCounter({
      name: "geode_events_published_total",
      help: "Runtime events and timeline records stored by JetStream.",
      registers,
    });
    this.publishFailed = pendingCounter({
      name: "geode_event_publish_failures_total",
      help: "Runtime events and timeline records given up on after every publish attempt.",
      registers,
    });
    this.rowsWritten = pendingCounter({
      name: "geode_recorder_rows_written_total",
      help: "Projection rows the activity-recorder inserted, by table.",
      labelNames: ["table"] as const,
      registers,
    });
    this.batchSeconds = pendingHistogram({
      name: "geode_recorder_batch_duration_seconds",
      help: "Time to write one projection batch (its transaction, retries included), by stream.",
      labelNames: ["stream"] as const,
      buckets: BATCH_BUCKETS,
      registers,
    });
    this.quarantined = pendingCounter({
      name: "geode_recorder_quarantined_total",
      help: "Stream messages PostgreSQL refused for their content, kept in quarantined_messages instead of projected, by stream.",
      labelNames: ["stream"] as const,
      registers,
    });
    const lag = this.lagGauge();
    this.registry.registerMetric(lag);
    this.auditLeafCount = pendingCounter({
      name: "geode_audit_leaves_total",
      help: "Leaves the notary appended to an audit log's Merkle tree (gap leaves included), by log.",
      labelNames: ["log"] as const,
      registers,
    });
    this.auditGapCount = pendingCounter({
      name: "geode_audit_gaps_total",
      help: "Gap leaves the notary appended for stream sequences that were gone (deleted messages), by log.",
      labelNames: ["log"] as const,
      registers,
    });
    this.registry.registerMetric(this.checkpointAgeGauge());
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

  /** Seconds since each log's latest checkpoint, read from the notary at each scrape. */
  private checkpointAgeGauge(): PromClient.Gauge<"log"> {
    const source = () => this.checkpointAgeSource;
    return new (prom().Gauge)({
      name: "geode_audit_checkpoint_age_seconds",
      help: "Seconds since the notary signed an audit log's latest checkpoint, by log (an active notary only).",
      labelNames: ["log"] as const,
      registers: [],
      collect() {
        this.reset();
        for (const { log, seconds } of source()?.() ?? []) this.labels(log).set(seconds);
      },
    });
  }

  /** Where `geode_audit_checkpoint_age_seconds` comes from (the notary sets it). */
  setCheckpointAgeSource(source: CheckpointAgeSource | undefined): void {
    this.checkpointAgeSource = source;
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

  policyDecision(hook: string, decision: string, mode: string): void {
    this.policyCount(hook, decision, mode).inc();
  }

  governanceGap(agentKind: string): void {
    this.gapCount(agentKind).inc();
  }

  governanceGapKinds(agentKinds: readonly string[]): void {
    // A series that appears at 1 shows no increase() to an alert rule: it starts at 0.
    for (const kind of agentKinds) this.gapCount(kind);
  }

  verifyDecision(decision: string): void {
    this.verifyCount(decision).inc();
  }

  approvalPending(delta: 1 | -1): void {
    this.approvals.inc(delta);
  }

  eventPublished(): void {
    this.published().inc();
  }

  eventPublishFailed(): void {
    this.publishFailed().inc();
  }

  recorderRows(table: string, rows: number): void {
    if (rows > 0) this.rowsWritten(table).inc(rows);
  }

  recorderBatch(stream: string, seconds: number): void {
    this.batchSeconds(stream).observe(seconds);
  }

  recorderQuarantined(stream: string, messages: number): void {
    // 0 exports the series before the first one: an alert on its increase needs a sample before.
    this.quarantined(stream).inc(messages);
  }

  auditLeaves(log: string, leaves: number): void {
    this.auditLeafCount(log).inc(leaves);
  }

  auditGaps(log: string, gaps: number): void {
    this.auditGapCount(log).inc(gaps);
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
