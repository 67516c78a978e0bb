import type { z } from "zod";
import { describeIssues } from "./errors.js";

/** The codec of one agent's hook input: its common fields, and the fields each mapped event adds. */
export interface AgentInputCodec<T> {
  /** The body checked in one pass against its event's schema (the common one for other events). */
  decode(body: unknown): { input: T } | { error: string };
}

/**
 * Builds an agent's hook-input codec: `common` is what every event carries (fields the gateway
 * does not read pass through, as agents add fields between releases), `events[name]` what event
 * `name` carries beyond it; `eventField` names the event (`hook_event_name`).
 */
export function agentInputCodec<C extends z.ZodObject>(
  eventField: string,
  common: C,
  events: Readonly<Record<string, z.ZodObject>>,
): AgentInputCodec<z.infer<C>> {
  const schemas = new Map<string, z.ZodType>(
    Object.entries(events).map(([event, fields]) => [event, common.extend(fields.shape)]),
  );
  return {
    decode(body) {
      const event =
        body !== null && typeof body === "object" ? (body as Record<string, unknown>)[eventField] : undefined;
      const schema = typeof event === "string" ? schemas.get(event) : undefined;
      const r = (schema ?? common).safeParse(body);
      if (r.success) return { input: r.data as z.infer<C> };
      return { error: schema ? `${String(event)}: ${describeIssues(r.error)}` : describeIssues(r.error) };
    },
  };
}
