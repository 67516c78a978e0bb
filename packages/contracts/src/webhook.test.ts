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
  it("are HMAC-SHA256 of '<timestamp>.<body>' keyed with the secret (a vector computed with Python's hmac)", () => {
    expect(webhookSignature(secret, "1764525600000", body)).toBe(
      "sha256=7feb7b93c75e00e463490651d2fe4dc97f5ea1b9de00c97ba9305e2dd3ff1d70",
    );
    expect(webhookSignature(secret, "1764525600000", Buffer.from(body))).toBe(
      webhookSignature(secret, "1764525600000", body),
    );
  });

  it("verify refuses another body, timestamp or secret", () => {
    const sig = webhookSignature(secret, "1", body);
    expect(verifyWebhookSignature(secret, "1", body, sig)).toBe(true);
    expect(verifyWebhookSignature(secret, "2", body, sig)).toBe(false);
    expect(verifyWebhookSignature(secret, "1", `${body} `, sig)).toBe(false);
    expect(verifyWebhookSignature(`${secret}x`, "1", body, sig)).toBe(false);
    expect(verifyWebhookSignature(secret, "1", body, "sha256=00")).toBe(false);
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
