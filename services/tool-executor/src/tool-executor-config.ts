import path from "node:path";
import type { GeodeConfig } from "@geode/bus";
import { DEFAULT_RECEIPT_LEASE_MS } from "@geode/contracts";

/** What the tool boundary needs from configuration (DESIGN section 10 plus the tool folder). */
export interface ToolExecutorConfig {
  /** Tool-name globs that are always denied (`GEODE_TOOL_DENY`). */
  deny: string[];
  /** Tool-name globs that may run; empty = all (`GEODE_TOOL_ALLOW`). */
  allow: string[];
  /** Terminal time limit when a tool sets none (`GEODE_TOOL_TIMEOUT_MS`, default 300 s). */
  toolTimeoutMs: number;
  /** Wait for a human approver (`GEODE_APPROVAL_TIMEOUT_MS`, default 60 s). */
  approvalTimeoutMs: number;
  /** Length of the lease on a running call's receipt (`GEODE_RECEIPT_LEASE_MS`, default 10 s). */
  receiptLeaseMs: number;
  /** Folder the `fs.*` built-ins are confined to (`GEODE_TOOL_ROOT`, default `.geode/files`). */
  toolRoot: string;
  /** Budget of one hook invocation when the caller gives none (default 30 s). */
  hookTimeoutMs: number;
  /** Middleware modules, each exporting `register(registry)` (`GEODE_TOOL_MIDDLEWARE`). */
  middlewareModules: string[];
}

export const DEFAULT_TOOL_ROOT = ".geode/files";

const list = (v: string | undefined) =>
  (v ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");

/** Fills defaults; values from the validated service config win, then the tool-specific env. */
export function toolExecutorConfig(
  partial: Partial<ToolExecutorConfig> = {},
  config?: GeodeConfig,
  env: NodeJS.ProcessEnv = process.env,
): ToolExecutorConfig {
  return {
    deny: partial.deny ?? config?.toolDeny ?? [],
    allow: partial.allow ?? config?.toolAllow ?? [],
    toolTimeoutMs: partial.toolTimeoutMs ?? config?.toolTimeoutMs ?? 300_000,
    approvalTimeoutMs: partial.approvalTimeoutMs ?? config?.approvalTimeoutMs ?? 60_000,
    receiptLeaseMs: partial.receiptLeaseMs ?? config?.receiptLeaseMs ?? DEFAULT_RECEIPT_LEASE_MS,
    toolRoot: path.resolve(partial.toolRoot ?? (env["GEODE_TOOL_ROOT"] || DEFAULT_TOOL_ROOT)),
    hookTimeoutMs: partial.hookTimeoutMs ?? 30_000,
    middlewareModules: partial.middlewareModules ?? list(env["GEODE_TOOL_MIDDLEWARE"]),
  };
}
