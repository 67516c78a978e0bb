import type { ServiceObserver } from "@geode/service";
import { metrics, serviceMetrics } from "./metrics.js";
import { newTraceContext } from "./trace-ids.js";
import { runInTrace, withSpan } from "./tracing.js";

/**
 * The observer `serviceTelemetry` gives a service (`ServiceContext.observer`): spans through the
 * process's tracer, figures into its metrics; each a no-op while the process serves no metrics
 * and exports no spans.
 */
export const telemetryObserver: ServiceObserver = {
  span: (name, run) => withSpan(name, {}, run),
  traced: (trace, name, run) => runInTrace(trace ?? newTraceContext(), () => withSpan(name, {}, run)),
  handlerCall: (hook, handler, status) => metrics().handlerCall(hook, handler, status),
  policyDecision: (hook, decision, mode) => metrics().policyDecision(hook, decision, mode),
  governanceGap: (agentKind) => metrics().governanceGap(agentKind),
  governanceGapKinds: (agentKinds) => metrics().governanceGapKinds(agentKinds),
  approvalPending: (delta) => metrics().approvalPending(delta),
  recorderRows: (table, rows) => metrics().recorderRows(table, rows),
  recorderBatch: (stream, seconds) => metrics().recorderBatch(stream, seconds),
  recorderQuarantined: (stream, messages) => metrics().recorderQuarantined(stream, messages),
  auditLeaves: (log, leaves) => metrics().auditLeaves(log, leaves),
  auditGaps: (log, gaps) => metrics().auditGaps(log, gaps),
  auditCheckpointAge: (source) => serviceMetrics()?.setCheckpointAgeSource(source),
  recorderLag: (source) => serviceMetrics()?.setLagSource(source),
};
