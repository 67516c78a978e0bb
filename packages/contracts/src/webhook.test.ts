import { describe, expect, it } from "vitest";
import {
  newWebhookSecret,
  verifyWebhookSignature,
  WebhookRecordSchema,
  WebhookUrlSchema,
  webhookSignature,
} from "./webhook.js";

const secret = "geode_whsec_test-secret-0123456789abcdefghij";
const body = '{"name":"PreToolUse"}';

describe("webhook signatures", () => {
  const ts = "1764525600000";
  const delivery = "0b7c8f2e-3d1a-4c55-9e2f-6a1d2b3c4d5e";
  const signed = (timestamp = ts, id = delivery, b: string = body) => ({
    "geode-timestamp": timestamp,
    "geode-delivery": id,
    "geode-signature": webhookSignature(secret, timestamp, id, b),
  });
  const now = Number(ts) + 1000;

  it("are HMAC-SHA256 of '<timestamp>.<delivery>.<body>' keyed with the secret (a vector computed with Python's hmac)", () => {
    expect(webhookSignature(secret, ts, delivery, body)).toBe(
      "sha256=9595825d8ff68eab49bbd998ebff4a2a744a22e0c95404ceeb460fb5835c628e",
    );
    expect(webhookSignature(secret, ts, delivery, Buffer.from(body))).toBe(
      webhookSignature(secret, ts, delivery, body),
    );
  });

  it("verify accepts a fresh delivery, from Node's headers or a fetch Headers, and gives its id", () => {
    expect(verifyWebhookSignature(secret, signed(), body, { now })).toEqual({
      ok: true,
      delivery,
      timestamp: Number(ts),
    });
    const h = new Headers(signed());
    expect(verifyWebhookSignature(secret, h, Buffer.from(body), { now })).toMatchObject({ ok: true });
  });

  it("verify refuses another body, timestamp, delivery id or secret, and a tampered signature", () => {
    const refused = (headers: Record<string, string>, b = body, s = secret) =>
      verifyWebhookSignature(s, headers, b, { now });
    const sig = signed();
    expect(refused(sig, `${body} `)).toEqual({ ok: false, reason: "the signature does not match" });
    expect(refused({ ...sig, "geode-timestamp": String(Number(ts) + 1) })).toMatchObject({ ok: false });
    // The id is signed: a replayed body cannot be sent again under a fresh id.
    expect(refused({ ...sig, "geode-delivery": "1b7c8f2e-3d1a-4c55-9e2f-6a1d2b3c4d5e" })).toEqual({
      ok: false,
      reason: "the signature does not match",
    });
    expect(refused(sig, body, `${secret}x`)).toMatchObject({ ok: false });
    expect(refused({ ...sig, "geode-signature": "sha256=00" })).toMatchObject({ ok: false });
    expect(refused({ ...sig, "geode-delivery": "" })).toEqual({
      ok: false,
      reason: "no valid Geode-Delivery",
    });
    expect(refused({ ...sig, "geode-timestamp": "soon" })).toEqual({
      ok: false,
      reason: "no valid Geode-Timestamp",
    });
  });

  it("verify refuses a timestamp older (or further ahead) than 5 minutes, or than maxAgeMs", () => {
    const at = (offsetMs: number) => String(Number(ts) + offsetMs);
    expect(verifyWebhookSignature(secret, signed(at(-300_000)), body, { now: Number(ts) })).toMatchObject({
      ok: true,
    });
    expect(verifyWebhookSignature(secret, signed(at(-300_001)), body, { now: Number(ts) })).toEqual({
      ok: false,
      reason: "the timestamp is 300 s old (at most 300 s either way)",
    });
    expect(verifyWebhookSignature(secret, signed(at(400_000)), body, { now: Number(ts) })).toEqual({
      ok: false,
      reason: "the timestamp is 400 s ahead (at most 300 s either way)",
    });
    const old = signed(at(-60_000));
    expect(verifyWebhookSignature(secret, old, body, { now: Number(ts) })).toMatchObject({ ok: true });
    expect(verifyWebhookSignature(secret, old, body, { now: Number(ts), maxAgeMs: 30_000 })).toMatchObject({
      ok: false,
    });
    // Without `now`: the clock, so a delivery signed ten minutes ago is refused.
    expect(verifyWebhookSignature(secret, signed(String(Date.now() - 600_000)), body)).toMatchObject({
      ok: false,
    });
    expect(verifyWebhookSignature(secret, signed(String(Date.now())), body)).toMatchObject({ ok: true });
  });

  it("secrets are fresh and long; URLs are http(s) without credentials", () => {
    const a = newWebhookSecret();
    expect(a).toMatch(/^geode_whsec_[A-Za-z0-9_-]{43}$/);
    expect(newWebhookSecret()).not.toBe(a);
    expect(WebhookUrlSchema.safeParse("https://example.com/hook").success).toBe(true);
    for (const bad of ["ftp://x/", "file:///etc/passwd", "http://user:pw@x/", "not a url"])
      expect(WebhookUrlSchema.safeParse(bad).success, bad).toBe(false);
    expect(
      WebhookRecordSchema.safeParse({
        hook: "Stop",
        name: "x",
        url: "http://a/",
        secret: "short",
        priority: 1,
        timeout_ms: 0,
        schema_version: "geode.public-hook.v2",
        failure_mode: "open",
        lease_ms: 1,
        created_at: 0,
      }).success,
    ).toBe(false);
  });
});
