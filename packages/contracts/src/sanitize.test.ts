import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { exampleHookPayload } from "./hook-examples.js";
import { HookPayloadSchemas } from "./hook-payloads.js";
import { maskSecrets, SANITIZE_LIMITS, SECRET_KEYS, sanitizeJson, sanitizePayload } from "./sanitize.js";
import { applyRewrite, validateHookPayload } from "./validate-payload.js";

const bytes = (v: unknown) => Buffer.byteLength(JSON.stringify(v), "utf8");
const codePoints = (s: string) => [...s].length;

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object") {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}

describe("sanitizing: strings", () => {
  it("keeps the first 4,096 characters and appends …[truncated:N]", () => {
    const out = sanitizePayload({ s: "a".repeat(5000), exact: "b".repeat(4096) });
    expect(out["s"]).toBe(`${"a".repeat(4096)}…[truncated:904]`);
    expect(out["exact"]).toBe("b".repeat(4096));
  });

  it("counts code points, not UTF-16 units, and never splits a surrogate pair", () => {
    const emoji = "😀";
    const exact = emoji.repeat(4096); // 8,192 UTF-16 units but 4,096 characters: untouched
    const long = `x${emoji.repeat(4100)}`;
    // sanitizeJson: the same rules without the whole-payload bound (these strings are 16 KiB each).
    const out = sanitizeJson({ exact, long, han: "漢".repeat(4097) }) as Record<string, string>;
    expect(out["exact"] === exact).toBe(true);
    const long2 = out["long"]!;
    expect(long2 === `x${emoji.repeat(4095)}…[truncated:5]`).toBe(true);
    expect(codePoints(long2.split("…")[0]!)).toBe(4096);
    expect(out["han"] === `${"漢".repeat(4096)}…[truncated:1]`).toBe(true);
  });

  it("applies to strings inside arrays and nested objects", () => {
    const out = sanitizeJson({ list: ["c".repeat(4100)], deep: { s: "d".repeat(4097) } }) as {
      list: string[];
      deep: { s: string };
    };
    expect(out.list[0]).toBe(`${"c".repeat(4096)}…[truncated:4]`);
    expect(out.deep.s).toBe(`${"d".repeat(4096)}…[truncated:1]`);
  });
});

describe("sanitizing: collections, depth and keys", () => {
  it("trims arrays to 64 items", () => {
    const out = sanitizePayload({ list: Array.from({ length: 100 }, (_, i) => i) });
    expect(out["list"]).toEqual(Array.from({ length: 64 }, (_, i) => i));
    expect(out).not.toHaveProperty("_truncated_items");
  });

  it("keeps the first 64 entries of an object and records the rest in _truncated_items", () => {
    const big = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`k${i}`, i]));
    const out = sanitizeJson({ big }) as { big: Record<string, unknown> };
    const kept = Object.keys(out.big).filter((k) => k !== "_truncated_items");
    expect(kept).toEqual(Array.from({ length: 64 }, (_, i) => `k${i}`));
    expect(out.big["_truncated_items"]).toBe(36);
    const small = sanitizeJson({ k: 1 }) as Record<string, unknown>;
    expect(small).not.toHaveProperty("_truncated_items");
  });

  it('replaces values nested deeper than 8 levels by {"_truncated":"max_depth"}', () => {
    // The payload is level 1; build 12 nested levels below it.
    let nested: Record<string, unknown> = { leaf: "bottom" };
    for (let i = 11; i >= 1; i--) nested = { [`l${i}`]: nested, n: i };
    const out = sanitizePayload({ root: nested });
    let node = out;
    const path: string[] = ["root"];
    node = node["root"] as Record<string, unknown>;
    for (let i = 1; i <= 6; i++) {
      expect(node["n"], path.join(".")).toBe(i);
      node = node[`l${i}`] as Record<string, unknown>;
      path.push(`l${i}`);
    }
    // payload (1) → root (2) → l1..l6 (3..8): the 8th level is kept, with its scalars…
    expect(node["n"]).toBe(7);
    // …and the object below it is replaced.
    expect(node["l7"]).toEqual({ _truncated: "max_depth" });
    const list = sanitizePayload({ a: [[[[[[[[["deep"]]]]]]]]] });
    expect(JSON.stringify(list)).toBe('{"a":[[[[[[[{"_truncated":"max_depth"}]]]]]]]}');
  });

  it("cuts object keys to 128 characters", () => {
    const long = "k".repeat(200);
    const astral = "🔑".repeat(130);
    const out = sanitizeJson({ [long]: 1, [astral]: 2 }) as Record<string, unknown>;
    expect(out).toEqual({ ["k".repeat(128)]: 1, ["🔑".repeat(128)]: 2 });
  });

  it("turns non-finite numbers into strings", () => {
    const out = sanitizePayload({
      a: Number.NaN,
      b: Number.POSITIVE_INFINITY,
      c: [Number.NEGATIVE_INFINITY],
      d: 1.5,
    });
    expect(out).toEqual({ a: "NaN", b: "Infinity", c: ["-Infinity"], d: 1.5 });
    expect(JSON.parse(JSON.stringify(out))).toEqual(out);
  });
});

describe("sanitizing: secrets", () => {
  it("drops every secret key in any case and lists the original spelling, sorted", () => {
    const keys = [...SECRET_KEYS];
    expect(keys).toHaveLength(16);
    const input: Record<string, unknown> = { keep: "visible" };
    // Alternate spellings: lower, UPPER and Mixed case.
    const spelled = keys.map((k, i) =>
      i % 3 === 0 ? k : i % 3 === 1 ? k.toUpperCase() : k[0]!.toUpperCase() + k.slice(1),
    );
    for (const k of spelled) input[k] = "s3cr3t-value";
    const out = sanitizePayload(input);
    expect(out["keep"]).toBe("visible");
    expect(out["_redacted_fields"]).toEqual([...spelled].sort());
    for (const k of spelled) expect(out).not.toHaveProperty(k);
    expect(JSON.stringify(out)).not.toContain("s3cr3t-value");
  });

  it("lists a nested secret in that object's own _redacted_fields", () => {
    const out = sanitizePayload({
      tool_name: "http.get",
      arguments: { url: "https://x.test", Headers: { a: 1 }, auth: { Cookie: "c=1", user: "u" } },
    });
    expect(out).not.toHaveProperty("_redacted_fields");
    expect(out["arguments"]).toEqual({
      url: "https://x.test",
      auth: { user: "u", _redacted_fields: ["Cookie"] },
      _redacted_fields: ["Headers"],
    });
    expect(validateHookPayload("PreToolUse", out).ok).toBe(true);
  });

  it("unions with an existing _redacted_fields list", () => {
    const out = sanitizePayload({ _redacted_fields: ["password"], Token: "t", note: "n" });
    expect(out["_redacted_fields"]).toEqual(["Token", "password"]);
  });

  it("bounds an incoming _redacted_fields list like any collection of keys", () => {
    const list = Array.from({ length: 500 }, (_, i) => `${String(i).padStart(3, "0")}${"f".repeat(1000)}`);
    const out = sanitizePayload({ user_input: "x", _redacted_fields: list });
    const fields = out["_redacted_fields"] as string[];
    expect(fields).toHaveLength(64);
    expect(fields.every((f) => f.length === 128)).toBe(true);
    expect(bytes(out)).toBeLessThanOrEqual(32 * 1024);
  });

  it("keeps the union of both lists after a rewrite", () => {
    const first = validateHookPayload("PreToolUse", {
      tool_name: "http.get",
      arguments: { url: "u" },
      api_key: "k",
    });
    // api_key is not a PreToolUse field, but dropping it happens before validation: the payload is valid.
    expect(first).toEqual({
      ok: true,
      payload: { tool_name: "http.get", arguments: { url: "u" }, _redacted_fields: ["api_key"] },
    });
    if (!first.ok) return;
    const updates = sanitizeJson({ tool_name: "http.post", Authorization: "Bearer abc" }) as Record<
      string,
      unknown
    >;
    expect(updates["_redacted_fields"]).toEqual(["Authorization"]);
    const rewritten = applyRewrite("PreToolUse", first.payload, updates);
    expect(rewritten).toEqual({
      ok: true,
      payload: {
        tool_name: "http.post",
        arguments: { url: "u" },
        _redacted_fields: ["Authorization", "api_key"],
      },
    });
  });

  it("leaves the payload as it was when a rewrite result is invalid", () => {
    const payload = { tool_name: "fs.read", arguments: { path: "a" } };
    const result = applyRewrite("PreToolUse", payload, { arguments: "not an object" });
    expect(result.ok).toBe(false);
    expect(payload).toEqual({ tool_name: "fs.read", arguments: { path: "a" } });
  });

  it.each([
    [
      "an sk- API key",
      "key sk-proj-AbCdEfGhIjKlMnOpQrStUv123456 here",
      "sk-proj-AbCdEfGhIjKlMnOpQrStUv123456",
    ],
    ["an Anthropic key", "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv_123456", "AbCdEfGhIjKlMnOpQrStUv_123456"],
    ["a bearer token", "Authorization: Bearer abc.DEF-123_xyz~tok", "abc.DEF-123_xyz~tok"],
    [
      "a JWT",
      "jwt=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
      "eyJzdWIiOiIxMjM0NTY3ODkwIn0",
    ],
    [
      "a PEM private key",
      "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq\nZmFrZQ==\n-----END RSA PRIVATE KEY-----\ntrailer",
      "MIIEowIBAAKCAQEA7bq",
    ],
    ["an AWS access key id", "aws AKIAIOSFODNN7EXAMPLE used", "AKIAIOSFODNN7EXAMPLE"],
    ["a password= pair", "db?user=app&password=hunter2&x=1", "hunter2"],
    ["a password: pair", 'config password: "correct horse"', "correct horse"],
    ["a password in JSON text", '{"user":"app","password":"hunter2"}', "hunter2"],
    ["a --password flag and its value", "mysql --user app --password hunter2 db", "hunter2"],
    ["a --token flag, quoted", `gh auth login --token "ab cd ef"`, "ab cd ef"],
    ["an --api-key flag", "tool --api-key 0123abcd --verbose", "0123abcd"],
  ])("masks %s", (_label, text, secret) => {
    const masked = maskSecrets(text);
    expect(masked).not.toContain(secret);
    expect(masked).toContain("[REDACTED]");
    const out = sanitizePayload({ user_input: text, nested: { list: [text] } });
    expect(JSON.stringify(out)).not.toContain(secret);
  });

  it("leaves ordinary text alone", () => {
    const text = "Tokens per second went up; the key insight is the skeleton sk- prefix alone.";
    expect(maskSecrets(text)).toBe(text);
    expect(sanitizePayload({ t: text })).toEqual({ t: text });
  });

  it("keeps the surrounding text when masking", () => {
    expect(maskSecrets("x=1 password=hunter2 y=2")).toBe("x=1 password=[REDACTED] y=2");
    expect(maskSecrets("Bearer abcdefghijklmnop done")).toBe("Bearer [REDACTED] done");
    expect(maskSecrets("run --token x1 --tokens-per-second 5 --secret-file f")).toBe(
      "run --token [REDACTED] --tokens-per-second 5 --secret-file f",
    );
  });
});

describe("sanitizing: the 32 KiB whole-payload bound", () => {
  it("keeps a PostToolUse with a 20 × 4,096-character result within 32 KiB, all five fields typed", () => {
    const result = Object.fromEntries(
      Array.from({ length: 20 }, (_, i) => [`field_${i}`, String.fromCharCode(97 + i).repeat(4096)]),
    );
    const input = {
      tool_name: "fs.read",
      arguments: { path: "big.txt" },
      result,
      has_error: false,
      executed: true,
    };
    const frozen = deepFreeze(structuredClone(input));
    const validated = validateHookPayload("PostToolUse", frozen);
    expect(validated.ok).toBe(true);
    if (!validated.ok) return;
    const out = validated.payload;
    expect(bytes(out)).toBeLessThanOrEqual(SANITIZE_LIMITS.maxPayloadBytes);
    expect(bytes(out)).toBeLessThanOrEqual(32 * 1024);
    expect(out["tool_name"]).toBe("fs.read");
    expect(out["arguments"]).toEqual({ path: "big.txt" });
    expect(out["has_error"]).toBe(false);
    expect(out["executed"]).toBe(true);
    expect(HookPayloadSchemas.PostToolUse.safeParse(out).success).toBe(true);
    // The oversized object is replaced by a typed marker that identifies what was there.
    const sha = createHash("sha256").update(JSON.stringify(result)).digest("hex");
    expect(out["result"]).toEqual({ _truncated: true, payload_sha256: sha, keys: Object.keys(result) });
    expect(frozen).toEqual(input);
  });

  it("cuts strings, trims arrays and replaces objects, keeping each field's JSON type", () => {
    const huge = "z".repeat(4000);
    const item = "l".repeat(300);
    const input = {
      text: "q".repeat(4096),
      text2: "w".repeat(4096),
      text3: "e".repeat(4096),
      text4: "r".repeat(4096),
      text5: "t".repeat(4096),
      text6: "y".repeat(4096),
      text7: "u".repeat(4096),
      text8: "i".repeat(4096),
      list: Array.from({ length: 64 }, () => item),
      obj: Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`o${i}`, huge])),
      flag: true,
      count: 3,
    };
    const out = sanitizePayload(input);
    expect(bytes(out)).toBeLessThanOrEqual(32 * 1024);
    expect(Object.keys(out)).toEqual(Object.keys(input));
    expect(out["flag"]).toBe(true);
    expect(out["count"]).toBe(3);
    const list = out["list"] as string[];
    expect(Array.isArray(list)).toBe(true);
    expect(list.length).toBeGreaterThan(0);
    expect(list.length).toBeLessThan(64);
    expect(list.every((s) => s === item)).toBe(true);
    const obj = out["obj"] as { _truncated: boolean; payload_sha256: string; keys: string[] };
    expect(obj._truncated).toBe(true);
    expect(obj.payload_sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(obj.keys.length).toBeGreaterThan(0);
    for (const k of ["text", "text2", "text8"]) expect(typeof out[k]).toBe("string");
    const cut = Object.values(out).filter((v) => typeof v === "string" && /…\[truncated:\d+\]$/.test(v));
    expect(cut.length).toBeGreaterThan(0);
  });

  it("keeps a Stop payload valid when its string fields are huge", () => {
    const payload = {
      ...exampleHookPayload("Stop"),
      candidate_summary: "s".repeat(4096),
      rubric_misses: Array.from({ length: 64 }, (_, i) => `${i}:${"m".repeat(4000)}`),
      mode: "m".repeat(4096),
      termination_reason: "n".repeat(4096),
      policy_action: "p".repeat(4096),
      effective_mode: "e".repeat(4096),
    };
    const result = validateHookPayload("Stop", payload);
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(bytes(result.payload)).toBeLessThanOrEqual(32 * 1024);
    expect(result.payload["evidence_refs"]).toEqual(exampleHookPayload("Stop").evidence_refs);
    expect((result.payload["rubric_misses"] as string[]).length).toBeLessThan(64);
  });

  it("sanitizing twice gives what sanitizing once gives (a payload bounded before it is sent)", () => {
    const results: Record<string, unknown>[] = [
      { text: "x".repeat(5_000_000) },
      { a: "x".repeat(5_000), b: "y".repeat(5_000) },
      { rows: Array.from({ length: 100 }, (_, i) => `${"r".repeat(5_000)}${i}`) },
      { list: Array.from({ length: 5_000 }, (_, i) => ({ i, s: "q".repeat(500) })) },
      { s: `sk-abcdefghijklmnopqrstuvwxyz1234 ${"w".repeat(9_000)}` },
    ];
    for (const result of results) {
      const once = sanitizePayload({
        tool_name: "t",
        arguments: {},
        result,
        has_error: false,
        executed: true,
      });
      expect(sanitizePayload(once)).toEqual(once);
    }
  });

  it("leaves a payload under the bound untouched", () => {
    const p = exampleHookPayload("PostToolUse");
    expect(sanitizePayload(p)).toEqual(p);
  });
});

describe("sanitizing: inputs", () => {
  it("never mutates its input", () => {
    const input = deepFreeze({
      password: "p",
      list: Array.from({ length: 80 }, (_, i) => ({ i, token: "t" })),
      s: "x".repeat(5000),
      n: Number.NaN,
      _redacted_fields: ["cookie"],
      big: Object.fromEntries(Array.from({ length: 70 }, (_, i) => [`k${i}`, "v".repeat(600)])),
    });
    const copy = structuredClone(input);
    const out = sanitizePayload(input);
    expect(input).toEqual(copy);
    expect(out).not.toBe(input);
  });

  it("keeps a __proto__ key from JSON as data, never as the prototype", () => {
    const out = sanitizePayload(JSON.parse('{"a":1,"__proto__":{"polluted":true}}'));
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect((out as { polluted?: unknown }).polluted).toBeUndefined();
    expect(JSON.stringify(out)).toBe('{"a":1,"__proto__":{"polluted":true}}');
    expect(validateHookPayload("UserPromptSubmit", { user_input: "x", ...out }).ok).toBe(false);
  });

  it("makes non-JSON values JSON-safe", () => {
    const out = sanitizePayload({
      u: undefined,
      f: () => 1,
      big: 10n,
      when: new Date(0),
      list: [undefined, 1],
    });
    expect(out).toEqual({ big: "10", when: "1970-01-01T00:00:00.000Z", list: [null, 1] });
    expect(sanitizePayload("not an object")).toEqual({});
    expect(sanitizePayload(null)).toEqual({});
  });
});
