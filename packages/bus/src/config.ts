import { DEFAULT_NAMESPACE, DEFAULT_RECEIPT_LEASE_MS, NamespaceSchema } from "@geode/contracts";
import { z } from "zod";

const intFromEnv = (name: string, def: number) =>
  z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v.trim() === "") return def;
      const n = Number(v);
      if (!Number.isInteger(n) || n < 0) {
        ctx.addIssue({
          code: "custom",
          message: `${name} must be a non-negative integer, got ${JSON.stringify(v)}`,
        });
        return z.NEVER;
      }
      return n;
    });

const listFromEnv = z
  .string()
  .optional()
  .transform((v) =>
    (v ?? "")
      .split(",")
      .map((s) => s.trim())
      .filter((s) => s !== ""),
  );

const EnvSchema = z.object({
  NATS_URL: z.string().min(1).default("nats://127.0.0.1:4222"),
  NATS_USER: z.string().optional(),
  NATS_PASS: z.string().optional(),
  NATS_TOKEN: z.string().optional(),
  DATABASE_URL: z.string().optional(),
  GEODE_NAMESPACE: NamespaceSchema.default(DEFAULT_NAMESPACE),
  GEODE_RUNS_DIR: z.string().min(1).default(".geode/runs"),
  GEODE_TOOL_DENY: listFromEnv,
  GEODE_TOOL_ALLOW: listFromEnv,
  GEODE_TOOL_TIMEOUT_MS: intFromEnv("GEODE_TOOL_TIMEOUT_MS", 300_000),
  GEODE_APPROVAL_TIMEOUT_MS: intFromEnv("GEODE_APPROVAL_TIMEOUT_MS", 60_000),
  GEODE_RECEIPT_LEASE_MS: intFromEnv("GEODE_RECEIPT_LEASE_MS", DEFAULT_RECEIPT_LEASE_MS).refine(
    (n) => n > 0,
    {
      message: "GEODE_RECEIPT_LEASE_MS must be a positive integer",
    },
  ),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
});

/** Service configuration (DESIGN section 10), validated at start-up. */
export interface GeodeConfig {
  natsUrl: string;
  natsUser: string | undefined;
  natsPass: string | undefined;
  natsToken: string | undefined;
  databaseUrl: string | undefined;
  namespace: string;
  runsDir: string;
  toolDeny: string[];
  toolAllow: string[];
  toolTimeoutMs: number;
  approvalTimeoutMs: number;
  /** How long a receipt's lease lasts unless renewed by the executor running it. */
  receiptLeaseMs: number;
  logLevel: string;
}

export class ConfigError extends Error {
  override readonly name = "ConfigError";
}

/** Reads and validates the environment; a bad value throws ConfigError naming the variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): GeodeConfig {
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `${i.path.join(".") || "env"}: ${i.message}`);
    throw new ConfigError(`invalid configuration: ${lines.join("; ")}`);
  }
  const e = parsed.data;
  if ((e.NATS_USER === undefined) !== (e.NATS_PASS === undefined)) {
    throw new ConfigError("invalid configuration: NATS_USER and NATS_PASS must be set together");
  }
  return {
    natsUrl: e.NATS_URL,
    natsUser: e.NATS_USER,
    natsPass: e.NATS_PASS,
    natsToken: e.NATS_TOKEN,
    databaseUrl: e.DATABASE_URL === "" ? undefined : e.DATABASE_URL,
    namespace: e.GEODE_NAMESPACE,
    runsDir: e.GEODE_RUNS_DIR,
    toolDeny: e.GEODE_TOOL_DENY,
    toolAllow: e.GEODE_TOOL_ALLOW,
    toolTimeoutMs: e.GEODE_TOOL_TIMEOUT_MS,
    approvalTimeoutMs: e.GEODE_APPROVAL_TIMEOUT_MS,
    receiptLeaseMs: e.GEODE_RECEIPT_LEASE_MS,
    logLevel: e.LOG_LEVEL,
  };
}
