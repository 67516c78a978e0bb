import { NATS_VARS, natsCredentialsProblem } from "@geode/bus";
import { DEFAULT_RESULT_INLINE_BYTES, WEBHOOK_ALLOWABLE, type WebhookAllowable } from "@geode/contracts";
import { envSpec, envVar, read } from "@geode/env";
import { checkDatabaseUrl } from "./database-url.js";

/**
 * How long a service drains before it exits anyway (`GEODE_SHUTDOWN_TIMEOUT_MS`): a NATS or
 * database that went away must not hold a stopping process for good; half of compose's 20 s grace.
 */
const DEFAULT_SHUTDOWN_TIMEOUT_MS = 10_000;

/**
 * The environment every component reads (docs/operations.md, "Configuration"): the bus's own
 * (`NATS_VARS`) and the rest. A service's own settings are in its own spec
 * (`services/<name>/src/*-config.ts`), read by `runService` with these.
 */
export const COMMON_ENV = envSpec(
  {
    ...NATS_VARS,
    databaseUrl: envVar("DATABASE_URL", read.custom<string | undefined>(undefined, checkDatabaseUrl), {
      default: "unset: embedded PGlite under `.geode/pgdata`, through its owner process",
      meaning: "PostgreSQL of the projection (activity-recorder, `geode replay`, `geode prune`)",
    }),
    runsDir: envVar("GEODE_RUNS_DIR", read.string(".geode/runs"), {
      default: "`.geode/runs` (`/data/runs` in the image)",
      meaning: "where active runs' `events.jsonl` go",
    }),
    approvalTimeoutMs: envVar("GEODE_APPROVAL_TIMEOUT_MS", read.int(60_000), {
      default: "`60000`",
      meaning: "wait for a human approval before denying (tool-executor, agent gateway)",
    }),
    resultInlineBytes: envVar("GEODE_RESULT_INLINE_BYTES", read.int(DEFAULT_RESULT_INLINE_BYTES, 1), {
      default: `\`${DEFAULT_RESULT_INLINE_BYTES}\` (256 KiB)`,
      meaning:
        "a tool result whose JSON is larger travels by reference through the Object Store bucket `{ns}_results` (a remote tool's provider, tool-executor); keep it well under the server's `max_payload`",
    }),
    webhookAllow: envVar(
      "GEODE_WEBHOOK_ALLOW",
      read.custom<WebhookAllowable[]>([], (v, name) => {
        const kinds = v.split(",").map((s) => s.trim());
        const bad = kinds.find((k) => !(WEBHOOK_ALLOWABLE as readonly string[]).includes(k));
        return bad === undefined
          ? { value: [...new Set(kinds as WebhookAllowable[])] }
          : { error: `${name} must list ${WEBHOOK_ALLOWABLE.join(" and/or ")}, got ${JSON.stringify(v)}` };
      }),
      {
        default: "empty: public addresses only",
        meaning:
          "what webhook handlers may reach besides public addresses: `loopback` and/or `private` (comma-separated); link-local, cloud metadata and unspecified addresses are always refused (hook-dispatcher, `geode handlers add`)",
      },
    ),
    shutdownTimeoutMs: envVar("GEODE_SHUTDOWN_TIMEOUT_MS", read.int(DEFAULT_SHUTDOWN_TIMEOUT_MS, 1), {
      default: `\`${DEFAULT_SHUTDOWN_TIMEOUT_MS}\``,
      meaning:
        "how long a service may drain after SIGTERM or SIGINT (or once its supervisor is gone) before it exits anyway, with code 1; a second signal exits at once. Keep it under the compose `stop_grace_period` (20 s)",
    }),
    logLevel: envVar(
      "LOG_LEVEL",
      read.oneOf(["fatal", "error", "warn", "info", "debug", "trace", "silent"], "info"),
      {
        default: "`info`",
        meaning: "`fatal`, `error`, `warn`, `info`, `debug`, `trace` or `silent`; logs are pino JSON",
      },
    ),
  },
  natsCredentialsProblem,
);

/** The configuration every component reads, validated. */
export type GeodeConfig = ReturnType<typeof COMMON_ENV.parse>;

/** Reads and validates the common environment; a bad value throws ConfigError naming the variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): GeodeConfig {
  return COMMON_ENV.parse(env);
}

/**
 * `GEODE_RESULT_INLINE_BYTES`: results whose JSON is larger travel by reference. A bad value throws
 * ConfigError naming it.
 */
export function configuredResultInlineBytes(env: NodeJS.ProcessEnv = process.env): number {
  return COMMON_ENV.parse({ GEODE_RESULT_INLINE_BYTES: env["GEODE_RESULT_INLINE_BYTES"] }).resultInlineBytes;
}
