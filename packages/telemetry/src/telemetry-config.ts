import { envSpec, envVar, read } from "@geode/env";

/** The port of `/metrics` when `GEODE_METRICS_PORT` is unset (OpenTelemetry's Prometheus default). */
export const DEFAULT_METRICS_PORT = 9464;

/** The OTLP protocols spans can be exported with (`OTEL_EXPORTER_OTLP_PROTOCOL`). */
const OTLP_PROTOCOLS = ["http/protobuf", "http/json"] as const;

/**
 * Telemetry's own settings (docs/operations.md, "Configuration"): where `/metrics` is served and
 * where spans go. `runService` reads them with the service's others when a service is given
 * `serviceTelemetry`; a process without telemetry never reads them.
 */
export const TELEMETRY_ENV = envSpec({
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
});

/** Telemetry's settings, validated. */
export type TelemetryConfig = ReturnType<typeof TELEMETRY_ENV.parse>;
