import { DEFAULT_AUDIT_KEY_FILE } from "@geode/audit";
import { envSpec, envVar, read } from "@geode/env";

/** At most one checkpoint per log this often, and only when the log grew (DESIGN section 20). */
export const DEFAULT_CHECKPOINT_MS = 5_000;
/** At least one checkpoint per this many leaves, whatever the interval (DESIGN section 20). */
export const CHECKPOINT_MAX_LEAVES = 10_000;
/** The notary lease in `{ns}_notary`: a standby takes over within it; renewed every third. */
export const DEFAULT_LEASE_MS = 15_000;
/** Stream messages appended per Postgres transaction. */
export const DEFAULT_AUDIT_BATCH_SIZE = 1_000;

/** The notary's own environment (docs/operations.md, "Configuration"), beside the common one. */
export const NOTARY_ENV = envSpec({
  keyFile: envVar("GEODE_AUDIT_KEY_FILE", read.string(DEFAULT_AUDIT_KEY_FILE), {
    default: `\`${DEFAULT_AUDIT_KEY_FILE}\` (made by \`geode up\` when missing)`,
    meaning:
      "the Ed25519 key the notary signs checkpoints with: one line `PRIVATE+KEY+{name}+{hash}+{base64}`, mode 0600 (notary)",
  }),
  checkpointMs: envVar("GEODE_AUDIT_CHECKPOINT_MS", read.int(DEFAULT_CHECKPOINT_MS, 1), {
    default: `\`${DEFAULT_CHECKPOINT_MS}\``,
    meaning: `at most one checkpoint per log this often, when it grew; at least one every ${CHECKPOINT_MAX_LEAVES.toLocaleString("en-US")} leaves (notary)`,
  }),
  leaseMs: envVar("GEODE_AUDIT_LEASE_MS", read.int(DEFAULT_LEASE_MS, 300), {
    default: `\`${DEFAULT_LEASE_MS}\``,
    meaning: "the active notary's lease in `{ns}_notary`: a standby takes over within it (notary)",
  }),
  batchSize: envVar("GEODE_AUDIT_BATCH_SIZE", read.int(DEFAULT_AUDIT_BATCH_SIZE, 1), {
    default: `\`${DEFAULT_AUDIT_BATCH_SIZE}\``,
    meaning: "stream messages appended to the tree per Postgres transaction (notary)",
  }),
});
