import { z } from "zod";
import { AUDIT_LOGS } from "./names.js";

const count = z.number().int().min(0);

/** The latest signed checkpoint of one log, as the notary stored it. */
const ConsoleAuditCheckpointSchema = z.strictObject({
  /** Leaves the checkpoint covers. */
  size: count,
  /** Base64 root hash. */
  root_hash: z.string(),
  /** The name on its signature line (`— {key name} …`). */
  key_name: z.string(),
  /** Epoch milliseconds. */
  signed_at: z.number().int(),
  /** Milliseconds between signing and this reply. */
  age_ms: count,
});

/** One audit log (DESIGN section 20): its tree, its latest checkpoint, its gaps, whether it lags. */
const ConsoleAuditLogSchema = z.strictObject({
  log: z.enum(AUDIT_LOGS),
  /** `geode/{ns}/{log}`. */
  origin: z.string(),
  stream: z.string(),
  /** Leaves in the stored tree (0 before the notary first ran). */
  size: count,
  /** The last stream sequence in the tree (0: none). */
  last_seq: count,
  /** The stream's last sequence now; null when the stream is not there. */
  stream_last_seq: count.nullable(),
  /** Gap leaves recorded (deleted messages) since the log began. */
  gaps: count,
  /** The latest range of missing sequences the notary recorded; null when none. */
  last_gap: z.strictObject({ from_seq: count, to_seq: count }).nullable(),
  checkpoint: ConsoleAuditCheckpointSchema.nullable(),
  /**
   * The checkpoint is older than 3 × the interval while the stream grew past it (the default
   * interval, 5,000 ms, while no notary answers); false before the first checkpoint.
   */
  behind: z.boolean(),
});
export type ConsoleAuditLog = z.infer<typeof ConsoleAuditLogSchema>;

/** `GET /api/audit`: each log's latest checkpoint and gaps, the notary's state, and what is wrong. */
export const ConsoleAuditSchema = z.strictObject({
  /** Whether a notary answered its health request. */
  notary: z.enum(["active", "standby", "down"]),
  /** `GEODE_AUDIT_CHECKPOINT_MS` as the notary reported it; null when none answered. */
  checkpoint_ms: count.nullable(),
  logs: z.array(ConsoleAuditLogSchema),
  /** One sentence per log with gaps and per log behind: the console's red banner. */
  alerts: z.array(z.string()),
});
export type ConsoleAudit = z.infer<typeof ConsoleAuditSchema>;
