// What an agent runtime imports: invoke hooks, execute tools, verify answers, own sessions, runs and
// sub-agents, compact, call an LLM through the LLM join points, publish runtime events. A handler,
// tool or approver author imports @geode/sdk.
import type { RuntimeEventBus } from "@geode/bus";

export {
  type ConnectOptions,
  createHookClient,
  DEFAULT_INVOKE_TIMEOUT_MS,
  type EventObserver,
  type GeodeConnection,
  type HookClient,
  type InvokeOptions,
  RuntimeEventBus,
  type RuntimeEventBusOptions,
  type TimelineObserver,
} from "@geode/bus";
export {
  type Correlation,
  type CorrelationInput,
  type DispatchOutcome,
  formatTraceparent,
  GeodeError,
  HookEvent,
  HookName,
  parseTraceparent,
  RuntimeEvent,
  type SessionRecord,
  type ToolExecuteReply,
  type TraceContext,
  type VerifyReply,
} from "@geode/contracts";
// Its connection carries the trace context: a request without one starts a trace; `runInTrace`
// continues the caller's.
export { connectGeode, currentTrace, runInTrace } from "@geode/telemetry";
export { type CallLlmOptions, callLlm, type LlmAdapter } from "./call-llm.js";
export {
  type CompactionPlan,
  type CompactionRequest,
  type CompactionResult,
  type CompactionSteps,
  type Compactor,
  type CompactorOptions,
  createCompactor,
} from "./compaction.js";
export { createRuns, type Runs } from "./runs.js";
export {
  createSessions,
  type SessionEndRequest,
  type SessionEndResult,
  type SessionStartRequest,
  type SessionStartResult,
  type Sessions,
  type SessionsOptions,
} from "./sessions.js";
export {
  createSubagents,
  type Subagent,
  type SubagentStartRequest,
  type SubagentStopRequest,
  type SubagentStopResult,
  type Subagents,
  type SubagentsOptions,
} from "./subagents.js";
export {
  createToolClient,
  type ToolCall,
  type ToolClient,
  type ToolClientOptions,
} from "./tool-client.js";
export {
  createVerifyClient,
  DEFAULT_VERIFY_TIMEOUT_MS,
  followUpContext,
  type SystemContextMessage,
  type VerifyCallOptions,
  type VerifyClient,
} from "./verify-client.js";

/** Older integrations' name for the runtime event bus (`HookEvent` is `RuntimeEvent`'s). */
export type HookSystem = RuntimeEventBus;
