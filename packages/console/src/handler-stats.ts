import {
  type ConsoleHandler,
  EventEnvelopeSchema,
  type HandlerRegistration,
  type Names,
} from "@geode/contracts";
import type { NatsConnection } from "@nats-io/transport-node";
import { readStream } from "./stream-reader.js";

/** The host of each webhook handler's endpoint, keyed `{hook}.{handler}` (never the URL's path or query). */
export function webhookHosts(
  hooks: ReadonlyArray<{ hook: string; name: string; url: string }>,
): Map<string, string> {
  const hosts = new Map<string, string>();
  for (const w of hooks) {
    try {
      hosts.set(`${w.hook}.${w.name}`, new URL(w.url).host);
    } catch {
      hosts.set(`${w.hook}.${w.name}`, "(unreadable URL)");
    }
  }
  return hosts;
}

/** How far back "recent" reaches for a handler's error rate. */
const ERROR_RATE_WINDOW_MS = 5 * 60 * 1000;
/** At most this many audit events are read per look (the rate is then over the newest part read). */
const MAX_AUDITS = 20_000;

export interface HandlerCalls {
  calls: number;
  errors: number;
}

/** A registration as the console shows it (`GET /api/handlers`). */
export type HandlerView = ConsoleHandler;

/**
 * Counts each hook handler's calls and errors in the last `windowMs` from the `extension_invoked`
 * audit events on `{NS}_EVENTS` (surface `hook`; status `error` is an error), keyed `{hook}.{handler}`.
 */
export async function recentHandlerCalls(
  nc: NatsConnection,
  names: Names,
  windowMs = ERROR_RATE_WINDOW_MS,
): Promise<Map<string, HandlerCalls>> {
  const counts = new Map<string, HandlerCalls>();
  let read = 0;
  await readStream(
    nc,
    {
      stream: names.eventsStream,
      subject: names.event("extension_invoked"),
      start: { since: new Date(Date.now() - windowMs) },
    },
    (body) => {
      const r = EventEnvelopeSchema.safeParse(body);
      if (r.success && r.data.payload["surface"] === "hook") {
        const key = `${String(r.data.payload["name"])}.${String(r.data.payload["extension"])}`;
        const c = counts.get(key) ?? { calls: 0, errors: 0 };
        c.calls++;
        if (r.data.payload["status"] === "error") c.errors++;
        counts.set(key, c);
      }
      return ++read < MAX_AUDITS;
    },
  );
  return counts;
}

/**
 * Registrations in call order (hook, priority, name) with heartbeat age, recent error rate and, for
 * a webhook handler, its endpoint's host (`webhookHosts`, keyed `{hook}.{handler}`).
 */
export function handlerViews(
  regs: HandlerRegistration[],
  calls: Map<string, HandlerCalls>,
  now = Date.now(),
  webhookHosts: ReadonlyMap<string, string> = new Map(),
): HandlerView[] {
  return [...regs]
    .sort((a, b) =>
      a.hook !== b.hook ? (a.hook < b.hook ? -1 : 1) : a.priority - b.priority || (a.name < b.name ? -1 : 1),
    )
    .map((r) => {
      const c = calls.get(`${r.hook}.${r.name}`) ?? { calls: 0, errors: 0 };
      return {
        hook: r.hook,
        name: r.name,
        priority: r.priority,
        failure_mode: r.failure_mode,
        timeout_ms: r.timeout_ms,
        schema_version: r.schema_version,
        match: r.match ?? null,
        heartbeat_at: r.heartbeat_at,
        heartbeat_age_ms: Math.max(0, now - r.heartbeat_at),
        lease_ms: r.lease_ms,
        lease_expired: r.heartbeat_at + r.lease_ms < now,
        recent_calls: c.calls,
        recent_errors: c.errors,
        error_rate: c.calls === 0 ? null : c.errors / c.calls,
        webhook_host: webhookHosts.get(`${r.hook}.${r.name}`) ?? null,
      };
    });
}
