import { z } from "zod";
import { AuditHealthSchema } from "./audit-messages.js";
import { McpServerStateSchema } from "./mcp.js";

/** What a service answers on `{ns}.health.{service}`. */
export const HealthReplySchema = z.strictObject({
  service: z.string(),
  status: z.enum(["ok", "degraded"]),
  version: z.string(),
  started_at: z.number().int(),
  /** Why a degraded service is degraded, one line (absent when ok). */
  reason: z.string().optional(),
  /**
   * Something an operator should look at although the service works, one line: the recorder's
   * quarantined messages (docs/operations.md#quarantined-messages). Absent when there is none.
   */
  note: z.string().optional(),
  /** Where the service serves Prometheus metrics (`http://127.0.0.1:{port}/metrics`); null when off. */
  metrics_url: z.string().nullable().optional(),
  /** The mcp-bridge's upstream servers, one entry each (absent for every other service). */
  servers: z.array(McpServerStateSchema).max(1024).optional(),
  /** The notary's lease and logs (absent for every other service). */
  audit: AuditHealthSchema.optional(),
});
export type HealthReply = z.infer<typeof HealthReplySchema>;
