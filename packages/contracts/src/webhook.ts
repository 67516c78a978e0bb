import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { z } from "zod";
import {
  FailureModeSchema,
  HandlerMatchSchema,
  HandlerNameSchema,
  type HandlerRegistration,
} from "./handler-registration.js";
import { HookNameSchema, SchemaVersionSchema } from "./hook-name.js";

// ---- webhook handlers (KV {ns}_webhooks, key {HookName}.{handler}) ----

/** An `http:` or `https:` URL. */
export const WebhookUrlSchema = z
  .string()
  .max(2048)
  .refine((raw) => {
    try {
      const url = new URL(raw);
      return (url.protocol === "http:" || url.protocol === "https:") && url.username === "";
    } catch {
      return false;
    }
  }, "the URL must be http:// or https:// (credentials do not belong in it)");

/**
 * A hook handler that is an HTTP endpoint: the agent gateway serves its handler subject, POSTs each
 * envelope to `url` signed with `secret`, and keeps its registration in `{ns}_hook_handlers`
 * alive. Written by an operator (`geode handlers add --url`), read by the agent gateway. The
 * secret is stored here (the gateway signs with it) and nowhere else.
 */
export const WebhookRecordSchema = z.strictObject({
  hook: HookNameSchema,
  name: HandlerNameSchema,
  url: WebhookUrlSchema,
  secret: z.string().min(32).max(256),
  priority: z.number().int(),
  timeout_ms: z.number().int().min(0),
  schema_version: SchemaVersionSchema,
  failure_mode: FailureModeSchema,
  match: HandlerMatchSchema.nullable().optional(),
  lease_ms: z.number().int().positive(),
  created_at: z.number().int(),
});
export type WebhookRecord = z.infer<typeof WebhookRecordSchema>;

/** Epoch milliseconds of the request, as signed. */
export const WEBHOOK_TIMESTAMP_HEADER = "Geode-Timestamp";
/** `sha256=<hex HMAC-SHA256(secret, "<timestamp>.<body>")>`. */
export const WEBHOOK_SIGNATURE_HEADER = "Geode-Signature";

/** A new webhook secret: `geode_whsec_` and 32 random bytes, base64url. Used as UTF-8 bytes for the HMAC. */
export function newWebhookSecret(): string {
  return `geode_whsec_${randomBytes(32).toString("base64url")}`;
}

/**
 * The `Geode-Signature` value of one request: HMAC-SHA256, keyed with the secret's UTF-8 bytes, of
 * the timestamp (the `Geode-Timestamp` header, epoch ms, as written), a `.`, and the exact body bytes.
 */
export function webhookSignature(secret: string, timestamp: string, body: Uint8Array | string): string {
  return `sha256=${createHmac("sha256", secret).update(`${timestamp}.`).update(body).digest("hex")}`;
}

/** Checks a signature in constant time (what an endpoint written in TypeScript would do). */
export function verifyWebhookSignature(
  secret: string,
  timestamp: string,
  body: Uint8Array | string,
  signature: string,
): boolean {
  const expected = Buffer.from(webhookSignature(secret, timestamp, body));
  const given = Buffer.from(signature);
  return expected.length === given.length && timingSafeEqual(expected, given);
}

/** The handler registration a webhook stands for, beating `now` (written by `add`, kept by the gateway). */
export function webhookRegistration(record: WebhookRecord, now = Date.now()): HandlerRegistration {
  return {
    hook: record.hook,
    name: record.name,
    priority: record.priority,
    timeout_ms: record.timeout_ms,
    schema_version: record.schema_version,
    failure_mode: record.failure_mode,
    match: record.match ?? null,
    heartbeat_at: now,
    lease_ms: record.lease_ms,
  };
}
