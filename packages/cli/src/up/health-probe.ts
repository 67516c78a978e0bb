import { RequestFailedError, requestJson } from "@geode/bus";
import { HealthLeg, isMalformedReply, type Names } from "@geode/contracts";
import type { NatsConnection } from "@nats-io/transport-node";

/** One service's answer on `{ns}.health.{service}`, or why there was none. */
export interface HealthProbe {
  service: string;
  /** `down`: no answer (no responders, timeout or a malformed reply). */
  status: "ok" | "degraded" | "down";
  version?: string;
  started_at?: number;
  /** Why a degraded service is degraded. */
  reason?: string;
  /** What to look at although it works (the recorder's quarantined messages). */
  note?: string;
  /** Where the service serves Prometheus metrics; null when off. */
  metrics_url?: string | null;
  error?: string;
}

/** Asks one service for its health; never throws. */
export async function probeHealth(
  nc: NatsConnection,
  n: Names,
  service: string,
  timeoutMs: number,
): Promise<HealthProbe> {
  try {
    const { status, version, started_at, reason, note, metrics_url } = await requestJson(
      nc,
      n.health(service),
      {},
      {
        timeoutMs,
        reply: HealthLeg.reply,
      },
    );
    return {
      service,
      status,
      version,
      started_at,
      metrics_url: metrics_url ?? null,
      ...(reason !== undefined ? { reason } : {}),
      ...(note !== undefined ? { note } : {}),
    };
  } catch (err) {
    if (isMalformedReply(err)) return { service, status: "down", error: "malformed health reply" };
    if (err instanceof RequestFailedError && err.failure === "no_responders")
      return { service, status: "down", error: "no responders" };
    return { service, status: "down", error: err instanceof Error ? err.message : String(err) };
  }
}
