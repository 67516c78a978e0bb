// What a handler, tool or approver author imports: serve a hook handler, a remote tool or human
// approvals, connect, check a webhook delivery, and the contract's types. An agent runtime
// imports @geode/runtime.
export type { ConnectOptions, GeodeConnection } from "@geode/bus";
export {
  type ApprovalRequest,
  type Correlation,
  DEFAULT_WEBHOOK_MAX_AGE_MS,
  type FailureMode,
  GeodeError,
  type HandlerMatch,
  type HandlerRegistration,
  type HookDecision,
  type HookEnvelope,
  HookName,
  SchemaVersion,
  type ToolDefinition,
  type VerifyWebhookOptions,
  verifyWebhookSignature,
  WEBHOOK_DELIVERY_HEADER,
  WEBHOOK_SIGNATURE_HEADER,
  WEBHOOK_TIMESTAMP_HEADER,
  type WebhookHeaders,
  type WebhookVerification,
} from "@geode/contracts";
export {
  DEFAULT_HANDLER_LEASE_MS,
  DEFAULT_HANDLER_PRIORITY,
  DEFAULT_HANDLER_TIMEOUT_MS,
  type HookCall,
  type HookHandler,
  type ServedHook,
  type ServeHookOptions,
  serveHook,
} from "@geode/handler";
export { connectGeode, currentTrace, runInTrace } from "@geode/telemetry";
export {
  type ApprovalAnswer,
  type ServedApprovals,
  serveApprovals,
} from "./serve-approvals.js";
export {
  type ServedTool,
  type ServeToolOptions,
  serveTool,
  type ToolHandler,
  type ToolOutput,
} from "./serve-tool.js";
