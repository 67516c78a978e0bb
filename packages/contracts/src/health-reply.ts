import { z } from "zod";

/** What a service answers on `{ns}.health.{service}`. */
export const HealthReplySchema = z.strictObject({
  service: z.string(),
  status: z.enum(["ok", "degraded"]),
  version: z.string(),
  started_at: z.number().int(),
  /** Why a degraded service is degraded, one line (absent when ok). */
  reason: z.string().optional(),
  /** Where the service serves Prometheus metrics (`http://127.0.0.1:{port}/metrics`); null when off. */
  metrics_url: z.string().nullable().optional(),
});
export type HealthReply = z.infer<typeof HealthReplySchema>;
