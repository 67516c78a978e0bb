import { TELEMETRY_ENV } from "./telemetry-config.js";

/** The OTLP protocols spans can be exported with (`OTEL_EXPORTER_OTLP_PROTOCOL`). */
export type OtlpProtocol = ReturnType<typeof TELEMETRY_ENV.parse>["otlpProtocol"];

/**
 * The protocol spans are exported with: `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`, else
 * `OTEL_EXPORTER_OTLP_PROTOCOL`, else `http/protobuf`. A bad value throws ConfigError naming it.
 */
export function otlpTracesProtocol(env: NodeJS.ProcessEnv): OtlpProtocol {
  const { otlpProtocol, otlpTracesProtocol } = TELEMETRY_ENV.parse({
    OTEL_EXPORTER_OTLP_PROTOCOL: env["OTEL_EXPORTER_OTLP_PROTOCOL"],
    OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: env["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"],
  });
  return otlpTracesProtocol ?? otlpProtocol;
}
