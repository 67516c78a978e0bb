import { type CheckpointAgeSource, type LagSource, metrics, serviceMetrics } from "./metrics.js";

/**
 * What no interceptor at the bus's doors can see, reported by the code that knows it: a no-op
 * unless the process serves metrics (`serviceTelemetry`).
 */
export const observe = {
  /** One handler call of a chain, with its audited status (`ok`, `block`, `deny`, `error`). */
  handlerCall(hook: string, handler: string, status: string): void {
    metrics().handlerCall(hook, handler, status);
  },
  /** One evaluation of the policy-guard: its hook, its decision, and the set's mode. */
  policyDecision(hook: string, decision: string, mode: string): void {
    metrics().policyDecision(hook, decision, mode);
  },
  /** A tool result the agent gateway could not match to a PreToolUse (`geode_governance_gaps_total`). */
  governanceGap(agentKind: string): void {
    metrics().governanceGap(agentKind);
  },
  /** The agent kinds a gateway serves, whose gap counters start at 0. */
  governanceGapKinds(agentKinds: readonly string[]): void {
    metrics().governanceGapKinds(agentKinds);
  },
  /** A human approval request started (+1) or ended (-1). */
  approvalPending(delta: 1 | -1): void {
    metrics().approvalPending(delta);
  },
  /** Rows the recorder inserted into `table`. */
  recorderRows(table: string, rows: number): void {
    metrics().recorderRows(table, rows);
  },
  /** One projection batch, from its first write attempt to its commit. */
  recorderBatch(stream: string, seconds: number): void {
    metrics().recorderBatch(stream, seconds);
  },
  /** Messages of `stream` PostgreSQL refused for their content (quarantined, not projected). */
  recorderQuarantined(stream: string, messages: number): void {
    metrics().recorderQuarantined(stream, messages);
  },
  /** Leaves the notary appended to `log` (`geode_audit_leaves_total`; 0 starts the series). */
  auditLeaves(log: string, leaves: number): void {
    metrics().auditLeaves(log, leaves);
  },
  /** Gap leaves the notary appended to `log` (`geode_audit_gaps_total`; 0 starts the series). */
  auditGaps(log: string, gaps: number): void {
    metrics().auditGaps(log, gaps);
  },
  /** Where `geode_audit_checkpoint_age_seconds` is read from at each scrape (undefined: nowhere). */
  auditCheckpointAge(source: CheckpointAgeSource | undefined): void {
    serviceMetrics()?.setCheckpointAgeSource(source);
  },
  /** Where `geode_recorder_lag_messages` is read from at each scrape (undefined: nowhere). */
  recorderLag(source: LagSource | undefined): void {
    serviceMetrics()?.setLagSource(source);
  },
};
