import { decodeJson } from "@geode/bus";
import { HealthReplySchema, type Names } from "@geode/contracts";
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
    const m = await nc.request(n.health(service), new Uint8Array(), { timeout: timeoutMs });
    const parsed = HealthReplySchema.safeParse(decodeJson(m.data));
    if (!parsed.success) return { service, status: "down", error: "malformed health reply" };
    const { status, version, started_at, reason } = parsed.data;
    return { service, status, version, started_at, ...(reason !== undefined ? { reason } : {}) };
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    return { service, status: "down", error: /no responders/i.test(message) ? "no responders" : message };
  }
}
