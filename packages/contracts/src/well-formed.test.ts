import { describe, expect, it } from "vitest";
import { correlation } from "./correlation.js";
import { sanitizePayload, sanitizeText } from "./sanitize.js";
import { wellFormed, wellFormedJsonText } from "./well-formed.js";

const parse = (text: string) => JSON.parse(wellFormedJsonText(text)) as unknown;

describe("wellFormed", () => {
  it("turns lone surrogates into U+FFFD and keeps pairs", () => {
    expect(wellFormed("a\ud800b")).toBe("a\ufffdb");
    expect(wellFormed("\udc00")).toBe("\ufffd");
    expect(wellFormed("\ud83d\ude00")).toBe("\ud83d\ude00");
    expect(wellFormed("\ude00\ud83d")).toBe("\ufffd\ufffd");
    expect(wellFormed("plain")).toBe("plain");
  });
});

describe("wellFormedJsonText", () => {
  it("parses lone-surrogate escapes as U+FFFD, in values and keys", () => {
    expect(parse('"\\ud800"')).toBe("\ufffd");
    expect(parse('"x\\uDBFFy"')).toBe("x\ufffdy");
    expect(parse('"\\udc00\\ud800"')).toBe("\ufffd\ufffd");
    expect(parse('{"\\ud800": ["\\udfff"]}')).toEqual({ "\ufffd": ["\ufffd"] });
  });

  it("keeps escaped pairs, other escapes and escaped backslashes", () => {
    expect(parse('"\\ud83d\\ude00"')).toBe("\ud83d\ude00");
    expect(parse('"\\u0041\\n\\"\\\\"')).toBe('A\n"\\');
    // A literal backslash followed by the letters "ud800" is no escape.
    expect(parse('"\\\\ud800"')).toBe("\\ud800");
    expect(parse('"\\\\\\ud800"')).toBe("\\\ufffd");
  });

  it("leaves text without a surrogate escape as it is", () => {
    const text = JSON.stringify({ a: "b\u0001", c: ["\ud83d\ude00"] });
    expect(wellFormedJsonText(text)).toBe(text);
  });

  it("makes what JSON.stringify writes of any string parse well-formed", () => {
    for (const s of ["\ud800", "a\udc00\ud800b", "\\\ud800", "\\\\ud800\ud83d\ude00"])
      expect(parse(JSON.stringify(s))).toBe(wellFormed(s));
  });
});

describe("sanitizing gives valid Unicode", () => {
  it("in payload values, keys and texts", () => {
    const out = sanitizePayload({ model: "m\ud800", ["k\udfff"]: { reason: ["\ud800"] } });
    expect(out).toEqual({ model: "m\ufffd", "k\ufffd": { reason: ["\ufffd"] } });
    expect(sanitizeText("why\ud800", 64)).toBe("why\ufffd");
  });

  it("in correlation ids", () => {
    const c = correlation({ session_id: "s\ud800", turn_id: "t" });
    expect(c.session_id).toBe("s\ufffd");
    expect(c.turn_id).toBe("t");
  });
});
