import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { decodeAuditLeaf, encodeAuditLeaf, gapLeaf, messageLeaf, messageLeafHash } from "./audit-leaf.js";

const text = (b: Uint8Array) => new TextDecoder().decode(b);
const code = (c: string) => expect.objectContaining({ code: c });

describe("audit leaves", () => {
  it("are the DESIGN section 20 bytes of a message, with no trailing newline", () => {
    const data = new TextEncoder().encode('{"kind":"tool_call"}');
    const hash = createHash("sha256").update(data).digest("hex");
    const leaf = messageLeaf({ seq: 42, subject: "geode.events.session.s1", msgId: "m-1", data });
    expect(text(encodeAuditLeaf(leaf))).toBe(
      `geode-audit-leaf-v1\n42\ngeode.events.session.s1\nm-1\n${hash}`,
    );
    expect(text(encodeAuditLeaf(messageLeaf({ seq: 1, subject: "s", data })))).toBe(
      `geode-audit-leaf-v1\n1\ns\n\n${hash}`,
    );
  });

  it("stand for a deleted message with the data hash `deleted`", () => {
    expect(text(encodeAuditLeaf(gapLeaf(7)))).toBe("geode-audit-leaf-v1\n7\n\n\ndeleted");
  });

  it("decode back to their fields", () => {
    const leaf = messageLeaf({ seq: 9007199254740991, subject: "a.b", msgId: "x", data: new Uint8Array() });
    expect(decodeAuditLeaf(encodeAuditLeaf(leaf))).toEqual(leaf);
    expect(decodeAuditLeaf(encodeAuditLeaf(gapLeaf(3)))).toEqual(gapLeaf(3));
  });

  it("refuse fields that would make two leaves read alike", () => {
    const data = new Uint8Array();
    for (const seq of [0, -1, 1.5, 2 ** 53]) {
      expect(() => encodeAuditLeaf(messageLeaf({ seq, subject: "s", data }))).toThrow(
        code("invalid_argument"),
      );
    }
    expect(() => encodeAuditLeaf(messageLeaf({ seq: 1, subject: "a\nb", data }))).toThrow(
      code("invalid_argument"),
    );
    expect(() => encodeAuditLeaf(messageLeaf({ seq: 1, subject: "s", msgId: "x\n", data }))).toThrow(
      code("invalid_argument"),
    );
    expect(() => encodeAuditLeaf({ seq: 1, subject: "s", msgId: "", dataHash: "ABC" })).toThrow(
      code("invalid_argument"),
    );
    for (const bad of [
      "geode-audit-leaf-v2\n1\ns\n\ndeleted",
      "geode-audit-leaf-v1\n01\ns\n\ndeleted",
      "x",
    ]) {
      expect(() => decodeAuditLeaf(new TextEncoder().encode(bad))).toThrow(code("invalid_argument"));
    }
  });

  it("hash in one step as SHA-256(0x00 || the leaf's bytes)", () => {
    const rfc = (leaf: Uint8Array) =>
      new Uint8Array(createHash("sha256").update(Uint8Array.of(0)).update(leaf).digest());
    const data = new TextEncoder().encode('{"kind":"tool_call","text":"grüße ✓"}');
    for (const m of [
      { seq: 42, subject: "geode.events.session.s1", msgId: "m-1", data },
      { seq: 1, subject: "s", data: new Uint8Array() },
      { seq: 9007199254740991, subject: "a.b", msgId: "ünïcode-✓", data },
    ]) {
      expect(messageLeafHash(m)).toEqual(rfc(encodeAuditLeaf(messageLeaf(m))));
    }
    for (const bad of [
      { seq: 0, subject: "s", data },
      { seq: 1.5, subject: "s", data },
      { seq: 1, subject: "a\nb", data },
      { seq: 1, subject: "s", msgId: "x\n", data },
    ]) {
      expect(() => messageLeafHash(bad)).toThrow(code("invalid_argument"));
    }
  });
});
