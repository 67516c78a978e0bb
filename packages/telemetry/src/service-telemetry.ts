import { followConnection, type Logger } from "@geode/bus";
import type { Names } from "@geode/contracts";
import type { ServiceTelemetry } from "@geode/service";
import type { NatsConnection } from "@nats-io/transport-node";
import { legTelemetry } from "./leg-telemetry.js";
import { disableMetrics, enableMetrics } from "./metrics.js";
import { type MetricsServer, serveMetrics } from "./metrics-server.js";
import { telemetryObserver } from "./observe.js";
import { TELEMETRY_ENV, type TelemetryConfig } from "./telemetry-config.js";
import { incomingTrace, outgoingTraceHeaders } from "./trace-interceptors.js";
import { startTracing } from "./tracing-setup.js";

/**
 * The interceptors of a service's connection: the caller's trace continued, the legs' spans and
 * metrics inside it, and the trace (of those spans) written on what leaves.
 */
export function telemetryInterceptors(names: Names) {
  return [incomingTrace, legTelemetry(names), outgoingTraceHeaders];
}

/**
 * A service's metrics and traces, for `runService(name, { telemetry: serviceTelemetry }, …)`:
 * `/metrics` on 127.0.0.1:`GEODE_METRICS_PORT` and the span export of
 * `OTEL_EXPORTER_OTLP_ENDPOINT` started before the service connects, the interceptors on its
 * connection, its stage spans and figures (`telemetryObserver`), `geode_nats_connected` from its status.
 */
export const serviceTelemetry: ServiceTelemetry<TelemetryConfig> = {
  env: TELEMETRY_ENV,
  async start({ name, version, settings, log }) {
    const server = await openMetrics(settings.metricsPort, log);
    const stopTracing = await startTracing(name, version);
    return {
      metricsUrl: server?.url ?? null,
      observer: telemetryObserver,
      attach(nc: NatsConnection, names: Names) {
        if (server) watchConnection(nc);
        return telemetryInterceptors(names);
      },
      async stop() {
        await server?.close();
        await stopTracing?.();
      },
    };
  },
};

/** `geode_nats_connected`: 1 while the connection is up, 0 while it reconnects. */
function watchConnection(nc: NatsConnection): void {
  const m = enableMetrics();
  m.natsConnected(true);
  followConnection(nc, (up) => m.natsConnected(up));
}

/**
 * `/metrics` on 127.0.0.1:`port` before anything else starts, so the service's first calls are
 * counted; 0 leaves metrics off. A port that cannot be bound is logged and the service runs
 * without metrics (health then says `metrics_url: null`): observability never stops the work.
 */
async function openMetrics(port: number, log: Logger): Promise<MetricsServer | undefined> {
  if (port === 0) return undefined;
  try {
    return await serveMetrics(enableMetrics(), port);
  } catch (err) {
    disableMetrics();
    log.warn({ err, port }, "metrics not served: the port cannot be bound");
    return undefined;
  }
}
