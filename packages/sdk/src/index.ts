// What handler authors need from the contract, so a handler imports only @geode/sdk.
export {
  type Correlation,
  type FailureMode,
  GeodeError,
  type HandlerMatch,
  type HandlerRegistration,
  type HookDecision,
  type HookEnvelope,
  HookName,
  SchemaVersion,
} from "@geode/contracts";
export {
  type ApprovalAnswer,
  type ServedApprovals,
  serveApprovals,
} from "./approvals.js";
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
export { type ConnectOptions, connectGeode, type GeodeConnection } from "./connection.js";
export {
  createHookClient,
  DEFAULT_INVOKE_TIMEOUT_MS,
  type HookClient,
  type InvokeOptions,
} from "./hook-client.js";
export { createRuns, isValidRunId, RUN_ID_PATTERN, type Runs } from "./runs.js";
export {
  DEFAULT_HANDLER_LEASE_MS,
  DEFAULT_HANDLER_PRIORITY,
  DEFAULT_HANDLER_TIMEOUT_MS,
  type HookHandler,
  type ServedHook,
  type ServeHookOptions,
  serveHook,
} from "./serve-hook.js";
export {
  type ServedTool,
  serveTool,
  type ToolHandler,
  type ToolOutput,
} from "./serve-tool.js";
export {
  clearSessionState,
  createSessions,
  KeepRecord,
  mutateKvRecord,
  type SessionEndRequest,
  type SessionEndResult,
  type SessionStartRequest,
  type SessionStartResult,
  SessionStore,
  type Sessions,
  type SessionsOptions,
  TERMINAL_STATUSES,
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
