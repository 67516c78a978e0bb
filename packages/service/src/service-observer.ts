import type { TraceContext } from "@geode/contracts";

/** What `geode_audit_checkpoint_age_seconds` reads at each scrape: each log's checkpoint age. */
export type CheckpointAgeSource = () => ReadonlyArray<{ log: string; seconds: number }>;

/** What `geode_recorder_lag_messages` reads at each scrape: messages the projection is behind, per stream. */
export type LagSource = () => Promise<ReadonlyArray<{ stream: string; lag: number }>>;

/**
 * What a service reports that no interceptor at the bus's doors can see: its stages as spans and
 * the figures only its code knows. A service is given one (`ServiceContext.observer`, from its
 * telemetry; `NO_OBSERVER` without) and passes it to the code that reports; nothing here imports
 * `@geode/telemetry`, which plugs its own in from the service's `main.ts`.
 */
export interface ServiceObserver {
  /** Runs `run` as the span `name`, a child of the current trace's. */
  span<T>(name: string, run: () => Promise<T>): Promise<T>;
  /** Runs `run` as the span `name` in `trace` (a request's `traceparent`), or in a new trace without one. */
  traced<T>(trace: TraceContext | undefined, name: string, run: () => Promise<T>): Promise<T>;
  /** One handler call of a chain, with its audited status (`ok`, `block`, `deny`, `error`). */
  handlerCall(hook: string, handler: string, status: string): void;
  /** One evaluation of the policy-guard: its hook, its decision, and the set's mode. */
  policyDecision(hook: string, decision: string, mode: string): void;
  /** A tool result the agent gateway could not match to a PreToolUse (`geode_governance_gaps_total`). */
  governanceGap(agentKind: string): void;
  /** The agent kinds a gateway serves, whose gap counters start at 0. */
  governanceGapKinds(agentKinds: readonly string[]): void;
  /** A human approval request started (+1) or ended (-1). */
  approvalPending(delta: 1 | -1): void;
  /** Rows the recorder inserted into `table`. */
  recorderRows(table: string, rows: number): void;
  /** One projection batch, from its first write attempt to its commit. */
  recorderBatch(stream: string, seconds: number): void;
  /** Messages of `stream` PostgreSQL refused for their content (quarantined, not projected). */
  recorderQuarantined(stream: string, messages: number): void;
  /** Leaves the notary appended to `log` (`geode_audit_leaves_total`; 0 starts the series). */
  auditLeaves(log: string, leaves: number): void;
  /** Gap leaves the notary appended to `log` (`geode_audit_gaps_total`; 0 starts the series). */
  auditGaps(log: string, gaps: number): void;
  /** Where `geode_audit_checkpoint_age_seconds` is read from at each scrape (undefined: nowhere). */
  auditCheckpointAge(source: CheckpointAgeSource | undefined): void;
  /** Where `geode_recorder_lag_messages` is read from at each scrape (undefined: nowhere). */
  recorderLag(source: LagSource | undefined): void;
}

const nothing = (): void => undefined;

/** The observer of a service without telemetry: runs each span's work as it is, notes nothing. */
export const NO_OBSERVER: ServiceObserver = {
  span: (_name, run) => run(),
  traced: (_trace, _name, run) => run(),
  handlerCall: nothing,
  policyDecision: nothing,
  governanceGap: nothing,
  governanceGapKinds: nothing,
  approvalPending: nothing,
  recorderRows: nothing,
  recorderBatch: nothing,
  recorderQuarantined: nothing,
  auditLeaves: nothing,
  auditGaps: nothing,
  auditCheckpointAge: nothing,
  recorderLag: nothing,
};
