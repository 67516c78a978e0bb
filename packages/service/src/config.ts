import { NATS_VARS, natsCredentialsProblem } from "@geode/bus";
import { DEFAULT_RESULT_INLINE_BYTES, WEBHOOK_ALLOWABLE, type WebhookAllowable } from "@geode/contracts";
import { envSpec, envVar, read } from "@geode/env";
import { checkDatabaseUrl } from "./database-url.js";

/** The port of `/metrics` when `GEODE_METRICS_PORT` is unset (OpenTelemetry's Prometheus default). */
export const DEFAULT_METRICS_PORT = 9464;

/**
 * How long a service drains before it exits anyway (`GEODE_SHUTDOWN_TIMEOUT_MS`): a NATS or
 * database that went away must not hold a stopping process for good; half of compose's 20 s grace.
 */
const DEFAULT_SHUTDOWN_TIMEOUT_MS = 10_000;

/** The OTLP protocols spans can be exported with (`OTEL_EXPORTER_OTLP_PROTOCOL`). */
const OTLP_PROTOCOLS = ["http/protobuf", "http/json"] as const;

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
    metricsPort: envVar(
      "GEODE_METRICS_PORT",
      read.custom<number>(DEFAULT_METRICS_PORT, (v, name) =>
        /^[0-9]+$/.test(v) && Number(v) <= 65_535
          ? { value: Number(v) }
          : { error: `${name} must be a port (0-65535; 0 turns metrics off), got ${JSON.stringify(v)}` },
      ),
      {
        default: `\`${DEFAULT_METRICS_PORT}\``,
        meaning:
          "Prometheus `/metrics` on `127.0.0.1:{port}`; `geode up` gives its services this port and the next ones (hook-dispatcher, tool-executor, verifier, activity-recorder, agent-gateway, policy-guard, mcp-bridge, notary, then any other service); `0` turns metrics off",
      },
    ),
    otlpEndpoint: envVar("OTEL_EXPORTER_OTLP_ENDPOINT", read.optional(), {
      default: "unset: no spans",
      meaning:
        "OTLP/HTTP collector (e.g. `http://127.0.0.1:4318`): spans of hook invocations, handler calls, tool stages and verify stages are exported there; the `traceparent` headers travel either way",
    }),
    otlpProtocol: envVar("OTEL_EXPORTER_OTLP_PROTOCOL", read.oneOf(OTLP_PROTOCOLS, "http/protobuf"), {
      default: "`http/protobuf`",
      meaning:
        "how spans are sent: `http/protobuf` (OpenTelemetry's default) or `http/json`; `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL` overrides it, as in the OpenTelemetry SDKs; `grpc` is not supported",
    }),
    otlpTracesProtocol: envVar("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", read.oneOf(OTLP_PROTOCOLS, undefined), {
      default: "unset: `OTEL_EXPORTER_OTLP_PROTOCOL`",
      meaning: "the protocol of spans alone",
    }),
    tracesSampler: envVar("OTEL_TRACES_SAMPLER", read.optional(), {
      default: "unset: `parentbased_always_on`",
      meaning:
        "which traces are recorded, decided where a trace starts (a runtime's client, the gateway, a service called without `traceparent`) and kept downstream: `always_on`, `always_off` or `traceidratio` with `OTEL_TRACES_SAMPLER_ARG` the share (e.g. `0.1`), each also as `parentbased_…`; an unrecorded trace still travels to every message and row",
    }),
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
