export { type AgentActivity, type AgentCheck, agentActivity, type SessionAgent } from "./agent-activity.js";
export { type AuditApproval, type AuditEntry, auditTrail } from "./audit-trail.js";
export { AuditTreeStore } from "./audit-tree.js";
export { type BatchResult, type ProjectionBatch, writeBatch } from "./batch-writer.js";
export { copyLines, copyRows, stageAndInsert } from "./copy-writer.js";
export {
  type ServedEmbeddedDatabase,
  serveEmbeddedDatabase,
} from "./embedded-database.js";
export { type EmbeddedOwner, OWNER_FILE, processAlive, readLiveOwner } from "./embedded-owner.js";
export {
  describeDbError,
  isConnectionError,
  isContentError,
  ProjectionUnavailableError,
  redactDatabaseUrl,
} from "./errors.js";
export {
  dropProjection,
  dropProjectionTables,
  dropSecondaryIndexes,
  ensureSecondaryIndexes,
  migrateProjection,
  PROJECTION_MIGRATIONS,
  SECONDARY_INDEXES,
} from "./migrations.js";
export {
  DEFAULT_PGLITE_DIR,
  openProjectionDb,
  type ProjectionDb,
  type ProjectionDbOptions,
} from "./projection-db.js";
export {
  type CommittedBatch,
  ProjectionLoop,
  type ProjectionLoopOptions,
  type ProjectionStats,
  type StreamMessage,
} from "./projection-loop.js";
export { projectionNamespaces, projectionRunIds } from "./projection-namespaces.js";
export {
  backoffDelay,
  DEFAULT_RETRY,
  type ProjectionHealth,
  type ProjectionLogger,
  ProjectionOutage,
  type RetryPolicy,
} from "./projection-outage.js";
export {
  type ActivityEventRow,
  type DecodedMessage,
  decodeStreamMessage,
  type ExtensionInvocationRow,
  type ProjectedBatch,
  type ProjectedRow,
  projectMessages,
  type SessionEventRow,
  type StreamKind,
  storedPayload,
  timelineRetentionOf,
} from "./projection-rows.js";
export {
  type ActivityEventsTable,
  type ExtensionInvocationsTable,
  PROJECTION_TABLES,
  type ProjectionDatabase,
  type ProjectionOffsetsTable,
  type ProjectionTable,
  type QuarantinedMessagesTable,
  type SessionEventsTable,
} from "./projection-schema.js";
export {
  type QuarantinedRow,
  quarantineSummary,
} from "./quarantined-messages.js";
export {
  countRows,
  type Normalized,
  normalizeRow,
  type PruneCounts,
  pruneExpired,
  readOffsets,
} from "./queries.js";
