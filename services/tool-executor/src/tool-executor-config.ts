import path from "node:path";
import { RESULT_STORE_DEFAULTS } from "@geode/bus";
import { DEFAULT_RECEIPT_LEASE_MS, DEFAULT_RESULT_INLINE_BYTES } from "@geode/contracts";
import { envSpec, envVar, read } from "@geode/env";

const DEFAULT_TOOL_ROOT = ".geode/files";
const DEFAULT_TOOL_TIMEOUT_MS = 300_000;
const DEFAULT_RESULT_MAX_BYTES = 64 * 1024 * 1024;

/** The tool-executor's own environment (docs/operations.md, "Configuration"), beside the common one. */
export const TOOL_EXECUTOR_ENV = envSpec({
  deny: envVar("GEODE_TOOL_DENY", read.list(), {
    default: "empty",
    meaning: "tool-name globs always denied, comma-separated (tool-executor)",
  }),
  allow: envVar("GEODE_TOOL_ALLOW", read.list(), {
    default: "empty (all)",
    meaning: "tool-name globs allowed, comma-separated (tool-executor)",
  }),
  toolTimeoutMs: envVar("GEODE_TOOL_TIMEOUT_MS", read.int(DEFAULT_TOOL_TIMEOUT_MS), {
    default: `\`${DEFAULT_TOOL_TIMEOUT_MS}\``,
    meaning:
      "terminal time limit of a tool without its own `timeout_ms` (tool-executor; the runtime's tool client waits as long by default)",
  }),
  receiptLeaseMs: envVar("GEODE_RECEIPT_LEASE_MS", read.int(DEFAULT_RECEIPT_LEASE_MS, 1), {
    default: `\`${DEFAULT_RECEIPT_LEASE_MS}\``,
    meaning:
      "lease on a running call's receipt, renewed every third of it; a retry gets `in_progress` while it is live and `indeterminate` once it lapsed (tool-executor)",
  }),
  toolRoot: envVar("GEODE_TOOL_ROOT", read.string(DEFAULT_TOOL_ROOT), {
    default: `\`${DEFAULT_TOOL_ROOT}\``,
    meaning: "folder the built-in `fs.*` tools are confined to (tool-executor)",
  }),
  resultMaxBytes: envVar("GEODE_RESULT_MAX_BYTES", read.int(DEFAULT_RESULT_MAX_BYTES, 1), {
    default: `\`${DEFAULT_RESULT_MAX_BYTES}\` (64 MiB)`,
    meaning:
      "the largest tool result the executor reads back from `{ns}_results`; a reference to a larger one is an error result (tool-executor)",
  }),
  resultTtlMs: envVar("GEODE_RESULT_TTL_MS", read.int(RESULT_STORE_DEFAULTS.ttlMs, 1), {
    default: `\`${RESULT_STORE_DEFAULTS.ttlMs}\` (7 days)`,
    meaning:
      "how long `{ns}_results` keeps a large result, set when the executor creates the bucket; a receipt replayed later answers that its result expired (tool-executor)",
  }),
  resultStoreBytes: envVar("GEODE_RESULT_STORE_BYTES", read.int(RESULT_STORE_DEFAULTS.maxBytes, 1), {
    default: `\`${RESULT_STORE_DEFAULTS.maxBytes}\` (1 GiB)`,
    meaning:
      "size limit of `{ns}_results`, set when the executor creates it; a full bucket refuses new large results (an error result) and keeps the stored ones (tool-executor)",
  }),
  middlewareModules: envVar("GEODE_TOOL_MIDDLEWARE", read.list(), {
    default: "empty",
    meaning: "trusted tool middleware modules, comma-separated paths (tool-executor)",
  }),
});

/** What the tool boundary runs with. */
export interface ToolExecutorConfig {
  /** Tool-name globs that are always denied. */
  deny: string[];
  /** Tool-name globs that may run; empty = all. */
  allow: string[];
  /** Terminal time limit when a tool sets none. */
  toolTimeoutMs: number;
  /** Wait for a human approver. */
  approvalTimeoutMs: number;
  /** Length of the lease on a running call's receipt. */
  receiptLeaseMs: number;
  /** Folder the `fs.*` built-ins are confined to. */
  toolRoot: string;
  /** Budget of one hook invocation when the caller gives none (default 30 s). */
  hookTimeoutMs: number;
  /** Middleware modules, each exporting `register(registry)`. */
  middlewareModules: string[];
  /** A result whose JSON is larger travels by reference through `{ns}_results`. */
  resultInlineBytes: number;
  /** The largest result read back from `{ns}_results`. */
  resultMaxBytes: number;
  /** TTL of `{ns}_results` when this executor creates it. */
  resultTtlMs: number;
  /** Size limit of `{ns}_results` when this executor creates it. */
  resultStoreBytes: number;
}

/** Fills the defaults of what is not given (the service passes what it read from its environment). */
export function toolExecutorConfig(partial: Partial<ToolExecutorConfig> = {}): ToolExecutorConfig {
  return {
    deny: partial.deny ?? [],
    allow: partial.allow ?? [],
    toolTimeoutMs: partial.toolTimeoutMs ?? DEFAULT_TOOL_TIMEOUT_MS,
    approvalTimeoutMs: partial.approvalTimeoutMs ?? 60_000,
    receiptLeaseMs: partial.receiptLeaseMs ?? DEFAULT_RECEIPT_LEASE_MS,
    toolRoot: path.resolve(partial.toolRoot ?? DEFAULT_TOOL_ROOT),
    hookTimeoutMs: partial.hookTimeoutMs ?? 30_000,
    middlewareModules: partial.middlewareModules ?? [],
    resultInlineBytes: partial.resultInlineBytes ?? DEFAULT_RESULT_INLINE_BYTES,
    resultMaxBytes: partial.resultMaxBytes ?? DEFAULT_RESULT_MAX_BYTES,
    resultTtlMs: partial.resultTtlMs ?? RESULT_STORE_DEFAULTS.ttlMs,
    resultStoreBytes: partial.resultStoreBytes ?? RESULT_STORE_DEFAULTS.maxBytes,
  };
}
