export {
  AuditStore,
  LogMovedError,
  migrateAudit,
  type StoredCheckpoint,
  type StoredLog,
} from "./audit-store.js";
export { type Notary, type NotaryOptions, startNotary } from "./notary.js";
export {
  CHECKPOINT_MAX_LEAVES,
  DEFAULT_AUDIT_BATCH_SIZE,
  DEFAULT_CHECKPOINT_MS,
  DEFAULT_LEASE_MS,
  NOTARY_ENV,
} from "./notary-config.js";
export { LEASE_KEY } from "./notary-lease.js";
