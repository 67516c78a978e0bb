export { AgentStore } from "./agent-store.js";
export { type AttemptFacts, AttemptStore, newTurnRecord, totalsOf } from "./attempt-store.js";
export { BudgetSpendStore } from "./budget-spend-store.js";
export { BudgetStore } from "./budget-store.js";
export { HandlerRegistrations, leaseExpired, sameHandlerConfig } from "./handler-registrations.js";
export {
  KvRecords,
  type RecordChange,
  type RecordWatch,
  type Revisioned,
  type StoredVersion,
  type StoreOptions,
} from "./kv-records.js";
export { LlmPriceStore } from "./llm-price-store.js";
export { LlmProviderStore } from "./llm-provider-store.js";
export { McpServerStore } from "./mcp-server-store.js";
export {
  isLive,
  KeepRecord,
  MAX_CAS_ATTEMPTS,
  type MutateOptions,
  type MutateResult,
  mutateKvRecord,
} from "./mutate-kv-record.js";
export { PolicyStore } from "./policy-store.js";
export { type Admission, ReceiptStore, receiptRef, type StoredReceipt } from "./receipt-store.js";
export {
  type ReceiptResolution,
  type ReceiptResolutionResult,
  resolveReceipt,
} from "./resolve-receipt.js";
export { ResultRefError, type ResultRefProblem, ResultStore } from "./result-store.js";
export { RunStore } from "./run-store.js";
export {
  PAUSE_REASON,
  type SessionOpening,
  SessionStore,
  TERMINAL_STATUSES,
} from "./session-store.js";
export { ToolStore } from "./tool-store.js";
export { WebhookStore } from "./webhook-store.js";
