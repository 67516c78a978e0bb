export { type AgentInputCodec, agentInputCodec } from "./agent-input.js";
export {
  AgentGroupSchema,
  type AgentKind,
  AgentKindSchema,
  AgentNameSchema,
  type AgentRecord,
  AgentRecordSchema,
} from "./agent-record.js";
export {
  type ApprovalReply,
  ApprovalReplySchema,
  type ApprovalRequest,
  ApprovalRequestSchema,
} from "./approval-request.js";
export {
  CLAUDE_CODE_EVENTS,
  CLAUDE_CODE_HOOK_PATH,
  ClaudeCodeEventFields,
  type ClaudeCodeEventName,
  type ClaudeCodeHookInput,
  ClaudeCodeHookInputCodec,
  ClaudeCodeHookInputSchema,
  type ClaudeCodeHookOutput,
} from "./claude-code.js";
export {
  CODEX_EVENTS,
  CODEX_HOOK_PATH,
  CodexEventFields,
  type CodexEventName,
  type CodexHookInput,
  CodexHookInputCodec,
  CodexHookInputSchema,
  type CodexHookOutput,
} from "./codex.js";
export {
  type ConsoleApproval,
  type ConsoleApprovalAnswer,
  type ConsoleApprovalAnswered,
  ConsoleApprovalAnsweredSchema,
  ConsoleApprovalAnswerSchema,
  ConsoleApprovalSchema,
  ConsoleApprovalsPageSchema,
  type ConsoleHandler,
  ConsoleHandlerSchema,
  ConsoleHandlersPageSchema,
  type ConsoleLoginReply,
  ConsoleLoginReplySchema,
  type ConsoleLoginRequest,
  ConsoleLoginRequestSchema,
  type ConsoleLogoutReply,
  ConsoleLogoutReplySchema,
  type ConsoleMe,
  ConsoleMeSchema,
  type ConsolePage,
  type ConsoleParkedTurn,
  ConsoleParkedTurnSchema,
  ConsoleParkedTurnsPageSchema,
  type ConsoleReceipt,
  type ConsoleReceiptResolve,
  type ConsoleReceiptResolved,
  ConsoleReceiptResolvedSchema,
  ConsoleReceiptResolveSchema,
  ConsoleReceiptSchema,
  ConsoleReceiptsPageSchema,
  type ConsoleRecorder,
  type ConsoleRecorderLag,
  ConsoleRecorderLagSchema,
  ConsoleRecorderSchema,
  ConsoleRunsPageSchema,
  type ConsoleSessionResolve,
  type ConsoleSessionResolved,
  ConsoleSessionResolvedSchema,
  ConsoleSessionResolveSchema,
  type ConsoleTimelineItem,
  ConsoleTimelineItemSchema,
  type ConsoleTimelinePage,
  ConsoleTimelinePageSchema,
  OPERATOR_PATTERN,
} from "./console-api.js";
export {
  CORRELATION_FIELDS,
  type Correlation,
  type CorrelationInput,
  CorrelationInputSchema,
  CorrelationV2Schema,
  correlation,
  RequestCorrelationSchema,
  safeCorrelation,
  safeCorrelationId,
} from "./correlation.js";
export {
  closedFailureAction,
  DECISION_LIMITS,
  isStoppingAction,
  validateDecision,
} from "./decision.js";
export {
  describeIssues,
  ERROR_CODES,
  ErrorCode,
  ErrorKind,
  GeodeError,
  isErrorReply,
  parseOrThrow,
  toGeodeError,
} from "./errors.js";
export { fastCheck, fastParser } from "./fast-check.js";
export {
  type FailureMode,
  FailureModeSchema,
  type HandlerMatch,
  HandlerMatchSchema,
  HandlerNameSchema,
  type HandlerRegistration,
  HandlerRegistrationSchema,
} from "./handler-registration.js";
export { type HealthReply, HealthReplySchema } from "./health-reply.js";
export {
  type AttributedDecision,
  type DispatchOutcome,
  decisionReason,
  type HookDecision,
  type HookEnvelope,
  HookEnvelopeSchema,
  HookInvokeRequestSchema,
  hookEnvelope,
  isBlocked,
} from "./hook-envelope.js";
export { exampleHookPayload } from "./hook-examples.js";
export {
  ALLOWED_ACTIONS,
  HOOK_NAMES,
  HookName,
  HookNameSchema,
  isHookName,
  SchemaVersion,
  type SchemaVersionLabel,
  TOOL_HOOKS,
} from "./hook-name.js";
export {
  type EvidenceRef,
  type HookPayloadInput,
  MAX_EVIDENCE_REFS,
} from "./hook-payloads.js";
export {
  AGENT_NAME_PATTERN,
  DEFAULT_NAMESPACE,
  HANDLER_NAME_PATTERN,
  INVOCATION_ID_HEADER,
  INVOCATION_ID_PATTERN,
  isValidRunId,
  NAMESPACE_PATTERN,
  type Names,
  names,
  POLICY_SET_NAME_PATTERN,
  PROBE_HEADER,
  QueueGroup,
  RECORDER_CONSUMER,
  RUN_ID_PATTERN,
  SERVICE_NAMES,
  TOOL_NAME_PATTERN,
  VERIFIER_CONSUMERS,
} from "./names.js";
export {
  MAX_POLICY_TEXT_CHARS,
  type PolicyMode,
  PolicyModeSchema,
  type PolicyRecord,
  PolicyRecordSchema,
  PolicySetNameSchema,
} from "./policy-record.js";
export { publicHookSchema } from "./public-hook-schema.js";
export {
  DEFAULT_RECEIPT_LEASE_MS,
  isReceiptRunning,
  type Receipt,
  type ReceiptRef,
  ReceiptSchema,
  type ReceiptState,
  receiptStorageKey,
} from "./receipt.js";
export {
  DEFAULT_RESULT_INLINE_BYTES,
  isResultRef,
  type ObjectInfo,
  ObjectInfoSchema,
  type ResultRef,
  ResultRefSchema,
  type ResultWriter,
  resultChunkPrefix,
  resultMetaSubject,
  type ToolResultOffloaded,
  ToolResultOffloadedSchema,
  toolSubjectToken,
  unresolvedResultReply,
} from "./result-ref.js";
export { type RunRecord, RunRecordSchema } from "./run-record.js";
export {
  type EventEnvelope,
  EventEnvelopeSchema,
  type ExtensionInvokedPayload,
  ExtensionInvokedPayloadSchema,
  HookEvent,
  isRuntimeEvent,
  RETENTION_DAYS,
  type RetentionBucket,
  RUNTIME_EVENTS,
  RuntimeEvent,
  retentionBucketOf,
  TIMELINE_KINDS,
  type TimelineKind,
  type TimelineRecord,
  TimelineRecordSchema,
} from "./runtime-event.js";
export {
  SANITIZE_LIMITS,
  SECRET_KEYS,
  sanitizeJson,
  sanitizePayload,
  sanitizePayloadJson,
  sanitizeText,
  sha256,
} from "./sanitize.js";
export { type SessionRecord, SessionRecordSchema, type SessionStatus } from "./session-record.js";
export { type ToolDefinition, ToolDefinitionSchema, type ToolEffect } from "./tool-definition.js";
export {
  operationKeyOf,
  receiptReply,
  type ToolCallStatus,
  type ToolExecuteReply,
  ToolExecuteReplySchema,
  ToolExecuteRequestSchema,
} from "./tool-execute.js";
export {
  type ToolGlob,
  toolGlob,
} from "./tool-glob.js";
export {
  AGENT_TOOLS,
  safetyLevelOfKind,
  TOOL_KINDS,
  type ToolFacts,
  type ToolKind,
  type ToolKindEntry,
  type ToolOwner,
  toolFacts,
  toolKindOf,
} from "./tool-kinds.js";
export { ToolTerminalReplySchema, ToolTerminalRequestSchema } from "./tool-terminal.js";
export {
  formatTraceparent,
  newSpanId,
  newTraceContext,
  parseTraceparent,
  TRACEPARENT_HEADER,
  TRACESTATE_HEADER,
  type TraceContext,
  type TraceSampler,
  traceSamplerFollowsParent,
  traceSamplerFromEnv,
} from "./trace-context.js";
export { type TurnRecord, TurnRecordSchema, type VerifyTotals } from "./turn-record.js";
export {
  applyRewrite,
  validateHookPayload,
} from "./validate-payload.js";
export {
  type BuiltInResult,
  type PolicyAction,
  type Usage,
  type VerifyFinalizeRequest,
  VerifyFinalizeRequestSchema,
  type VerifyMode,
  type VerifyReply,
  VerifyReplySchema,
  type VerifyResolveRequest,
  VerifyResolveRequestSchema,
} from "./verify-request.js";
export {
  DEFAULT_WEBHOOK_MAX_AGE_MS,
  newWebhookSecret,
  type VerifyWebhookOptions,
  verifyWebhookSignature,
  WEBHOOK_DELIVERY_HEADER,
  WEBHOOK_SIGNATURE_HEADER,
  WEBHOOK_TIMESTAMP_HEADER,
  type WebhookHeaders,
  type WebhookRecord,
  WebhookRecordSchema,
  WebhookUrlSchema,
  type WebhookVerification,
  webhookRegistration,
  webhookSignature,
} from "./webhook.js";
export {
  type AddressKind,
  addressKind,
  addressRefusal,
  checkHost,
  type HostCheck,
  METADATA_HOSTS,
  urlHost,
  WEBHOOK_ALLOWABLE,
  type WebhookAllowable,
} from "./webhook-address.js";
export {
  type Codec,
  isMalformedReply,
  MAX_JSON_DEPTH,
  malformedReply,
} from "./wire-codec.js";
export {
  ApprovalLeg,
  HealthLeg,
  HookHandlerLeg,
  HookInvokeLeg,
  invalidDecision,
  isInvalidDecision,
  ToolExecuteLeg,
  ToolTerminalLeg,
  VerifyFinalizeLeg,
  VerifyResolveLeg,
  WIRE_LEGS,
  type WireLeg,
} from "./wire-legs.js";
