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
 * A hook handler that is an HTTP endpoint: the hook-dispatcher serves its handler subject, POSTs
 * each envelope to `url` signed with `secret`, and keeps its registration in `{ns}_hook_handlers`
 * alive. Written by an operator (`geode handlers add --url`), read by the hook-dispatcher. The
 * secret is stored here (the dispatcher signs with it) and nowhere else.
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
/** A fresh id per delivery (a UUID), signed with the body: an endpoint drops an id it has seen. */
export const WEBHOOK_DELIVERY_HEADER = "Geode-Delivery";
/** `sha256=<hex HMAC-SHA256(secret, "<timestamp>.<delivery>.<body>")>`. */
export const WEBHOOK_SIGNATURE_HEADER = "Geode-Signature";
/** How old (or how far ahead, for clock skew) a signed timestamp may be by default: 5 minutes. */
export const DEFAULT_WEBHOOK_MAX_AGE_MS = 5 * 60 * 1000;

/** A new webhook secret: `geode_whsec_` and 32 random bytes, base64url. Used as UTF-8 bytes for the HMAC. */
export function newWebhookSecret(): string {
  return `geode_whsec_${randomBytes(32).toString("base64url")}`;
}

/**
 * The `Geode-Signature` value of one request: HMAC-SHA256, keyed with the secret's UTF-8 bytes, of
 * the timestamp (`Geode-Timestamp`, epoch ms, as written), a `.`, the delivery id (`Geode-Delivery`),
 * a `.`, and the exact body bytes.
 */
export function webhookSignature(
  secret: string,
  timestamp: string,
  delivery: string,
  body: Uint8Array | string,
): string {
  return `sha256=${createHmac("sha256", secret).update(`${timestamp}.${delivery}.`).update(body).digest("hex")}`;
}

/** The request headers a delivery is checked with: Node's `req.headers`, or a fetch `Headers`. */
export type WebhookHeaders = Headers | Readonly<Record<string, string | readonly string[] | undefined>>;

/** A delivery that checks out (its id, for the endpoint's replay check), or why not. */
export type WebhookVerification =
  | { ok: true; delivery: string; timestamp: number }
  | { ok: false; reason: string };

export interface VerifyWebhookOptions {
  /** Largest age of the signed timestamp, either way (clock skew), ms; default 5 minutes. */
  maxAgeMs?: number;
  /** Now, epoch ms (tests). */
  now?: number;
}

function header(headers: WebhookHeaders, name: string): string | undefined {
  if (typeof (headers as Headers).get === "function") return (headers as Headers).get(name) ?? undefined;
  const wanted = name.toLowerCase();
  const rec = headers as Readonly<Record<string, string | readonly string[] | undefined>>;
  const key = Object.keys(rec).find((k) => k.toLowerCase() === wanted);
  const value = key === undefined ? undefined : rec[key];
  return typeof value === "string" ? value : undefined;
}

const DELIVERY_ID = /^[A-Za-z0-9_-]{1,128}$/;

/**
 * Checks one delivery the way an endpoint written in TypeScript would: the signature over timestamp,
 * delivery id and body (in constant time), then the timestamp's age. A delivery that checks out may
 * still be a replay: drop an id seen within `maxAgeMs` (older ones fail the age check anyway).
 */
export function verifyWebhookSignature(
  secret: string,
  headers: WebhookHeaders,
  body: Uint8Array | string,
  options: VerifyWebhookOptions = {},
): WebhookVerification {
  const timestamp = header(headers, WEBHOOK_TIMESTAMP_HEADER) ?? "";
  const delivery = header(headers, WEBHOOK_DELIVERY_HEADER) ?? "";
  const signature = header(headers, WEBHOOK_SIGNATURE_HEADER) ?? "";
  if (!/^[0-9]{1,16}$/.test(timestamp)) return { ok: false, reason: `no valid ${WEBHOOK_TIMESTAMP_HEADER}` };
  if (!DELIVERY_ID.test(delivery)) return { ok: false, reason: `no valid ${WEBHOOK_DELIVERY_HEADER}` };
  const expected = Buffer.from(webhookSignature(secret, timestamp, delivery, body));
  const given = Buffer.from(signature);
  if (expected.length !== given.length || !timingSafeEqual(expected, given))
    return { ok: false, reason: "the signature does not match" };
  const maxAgeMs = options.maxAgeMs ?? DEFAULT_WEBHOOK_MAX_AGE_MS;
  const age = (options.now ?? Date.now()) - Number(timestamp);
  if (Math.abs(age) > maxAgeMs) {
    const secs = `${Math.round(Math.abs(age) / 1000)} s ${age >= 0 ? "old" : "ahead"}`;
    return { ok: false, reason: `the timestamp is ${secs} (at most ${maxAgeMs / 1000} s either way)` };
  }
  return { ok: true, delivery, timestamp: Number(timestamp) };
}

/** The handler registration a webhook stands for, beating `now` (written by `add`, kept by the hook-dispatcher). */
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
