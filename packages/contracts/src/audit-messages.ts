import { z } from "zod";
import { AUDIT_LOGS } from "./names.js";

const AuditLogSchema = z.enum(AUDIT_LOGS);

/**
 * `{ns}.audit.gap.{log}`: stream sequences `from_seq..to_seq` (inclusive) were gone when the notary
 * reached them (deleted messages); each has a leaf with the data hash `deleted` (DESIGN section 20).
 */
export const AuditGapSchema = z.strictObject({
  log: AuditLogSchema,
  from_seq: z.number().int().positive(),
  to_seq: z.number().int().positive(),
});
export type AuditGap = z.infer<typeof AuditGapSchema>;

/**
 * `{ns}.audit.checkpoint.{log}` (stream `{NS}_CHECKPOINTS`): one signed checkpoint. `note` is the
 * C2SP signed note exactly as it was signed; the other fields repeat what it says for readers that
 * do not parse notes. `Nats-Msg-Id` is `{log}:{size}`.
 */
export const AuditCheckpointSchema = z.strictObject({
  log: AuditLogSchema,
  origin: z.string(),
  size: z.number().int().nonnegative(),
  /** Base64 root hash. */
  root_hash: z.string(),
  note: z.string(),
  /** Epoch milliseconds. */
  signed_at: z.number().int(),
});
export type AuditCheckpointMessage = z.infer<typeof AuditCheckpointSchema>;

/** One log in the notary's health reply. */
export const AuditLogStateSchema = z.strictObject({
  log: AuditLogSchema,
  /** Leaves in the tree. */
  size: z.number().int().nonnegative(),
  /** The last stream sequence appended (0: none yet). */
  last_seq: z.number().int().nonnegative(),
  /** Gap leaves appended so far (deleted messages). */
  gaps: z.number().int().nonnegative(),
  /** Size of the latest signed checkpoint (0: none yet). */
  checkpoint_size: z.number().int().nonnegative(),
  /** Milliseconds since the latest checkpoint was signed; null before the first. */
  checkpoint_age_ms: z.number().int().nonnegative().nullable(),
});
export type AuditLogState = z.infer<typeof AuditLogStateSchema>;

/** The notary's part of its health reply: whether this instance holds the lease, and each log. */
export const AuditHealthSchema = z.strictObject({
  active: z.boolean(),
  /** Its `GEODE_AUDIT_CHECKPOINT_MS`: a checkpoint older than 3 × this while a log grew is behind. */
  checkpoint_ms: z.number().int().positive().optional(),
  logs: z.array(AuditLogStateSchema).max(AUDIT_LOGS.length),
});
export type AuditHealth = z.infer<typeof AuditHealthSchema>;

/** The value of the one key `lease` of `{ns}_notary`: the active notary and when its lease ends. */
export const NotaryLeaseSchema = z.strictObject({
  /** The instance holding it (a random id per process). */
  holder: z.string().min(1).max(128),
  /** Epoch milliseconds. */
  lease_until: z.number().int(),
});
export type NotaryLease = z.infer<typeof NotaryLeaseSchema>;
