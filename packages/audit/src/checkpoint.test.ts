import { describe, expect, it } from "vitest";
import { formatCheckpoint, openCheckpoint, parseCheckpoint, signCheckpoint } from "./checkpoint.js";
import { generateNoteKey, noteSigner, noteVerifier } from "./note-key.js";
import { EMPTY_ROOT, leafHash } from "./tree-hash.js";

const code = (c: string) => expect.objectContaining({ code: c });
const key = generateNoteKey("geode/test-notary");
const signer = noteSigner(key.signerKey);
const verifier = noteVerifier(key.verifierKey);
const checkpoint = { origin: "geode/test/events", size: 20852163, rootHash: leafHash(Uint8Array.of(1)) };

describe("checkpoints", () => {
  it("are the C2SP checkpoint text: origin, size, base64 root, each ending in a newline", () => {
    const root = Buffer.from(checkpoint.rootHash).toString("base64");
    expect(formatCheckpoint(checkpoint)).toBe(`geode/test/events\n20852163\n${root}\n`);
    expect(formatCheckpoint({ origin: "o", size: 0, rootHash: EMPTY_ROOT })).toBe(
      "o\n0\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n",
    );
  });

  it("parses the tree note of Go's sumdb/tlog note_test.go (its hash is an RFC 6962 leaf hash)", () => {
    const parsed = parseCheckpoint(
      "go.sum database tree\n123456789012\nTszzRgjTG6xce+z2AG31kAXYKBgQVtCSCE40HmuwBb0=\n",
    );
    expect(parsed.origin).toBe("go.sum database tree");
    expect(parsed.size).toBe(123456789012);
    expect(parsed.rootHash).toEqual(leafHash(new TextEncoder().encode("hello world")));
  });

  it("round-trips through a signed note", () => {
    const note = signCheckpoint(checkpoint, signer);
    expect(note.startsWith(`${formatCheckpoint(checkpoint)}\n— geode/test-notary `)).toBe(true);
    const opened = openCheckpoint(note, { verifiers: [verifier], origin: "geode/test/events" });
    expect(opened.checkpoint).toEqual(checkpoint);
    expect(opened.note.signatures.map((s) => s.name)).toEqual(["geode/test-notary"]);
  });

  it("refuses another log's checkpoint, a tampered size and another key", () => {
    const note = signCheckpoint(checkpoint, signer);
    expect(() => openCheckpoint(note, { verifiers: [verifier], origin: "geode/test/timeline" })).toThrow(
      code("wrong_origin"),
    );
    expect(() => openCheckpoint(note.replace("20852163", "20852164"), { verifiers: [verifier] })).toThrow(
      code("bad_signature"),
    );
    const other = noteVerifier(generateNoteKey("geode/test-notary").verifierKey);
    expect(() => openCheckpoint(note, { verifiers: [other] })).toThrow(code("unknown_key"));
  });

  it("refuses a signed text that is not a checkpoint", () => {
    for (const text of [
      "o\n1\n",
      "o\n1\nAAAA\n",
      "o\n1\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\next\n",
    ]) {
      const note = `${text}\n${signCheckpointLine(text)}`;
      expect(() => openCheckpoint(note, { verifiers: [verifier] })).toThrow(code("malformed_checkpoint"));
    }
  });

  it("refuses non-canonical sizes and hashes", () => {
    const root = "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=";
    const sizes = ["01", "+1", "-1", "1e3", " 1", "1 ", "0x10", "", "9007199254740992", "1".repeat(400)];
    for (const size of sizes)
      expect(() => parseCheckpoint(`o\n${size}\n${root}\n`)).toThrow(code("malformed_checkpoint"));
    // Go's own bad tree (trailing bits set), a short hash, base64 without padding, a newline short.
    const hashes = [
      "TszzRgjTG6xce+z2AG31kAXYKBgQVtCSCE40HmuwBTOOBIG=",
      "AAAA",
      root.slice(0, -1),
      `${root} `,
    ];
    for (const h of hashes)
      expect(() => parseCheckpoint(`o\n1\n${h}\n`)).toThrow(code("malformed_checkpoint"));
    expect(() => parseCheckpoint(`o\n1\n${root}`)).toThrow(code("malformed_checkpoint"));
    expect(() => parseCheckpoint(`\n1\n${root}\n`)).toThrow(code("malformed_checkpoint"));
    expect(() => parseCheckpoint(`${"o".repeat(300_000)}\n1\n${root}\n`)).toThrow(
      code("malformed_checkpoint"),
    );
    expect(parseCheckpoint(`o\n9007199254740991\n${root}\n`).size).toBe(Number.MAX_SAFE_INTEGER);
  });

  it("refuses to format what it could not parse back", () => {
    expect(() => formatCheckpoint({ ...checkpoint, origin: "two\nlines" })).toThrow(
      code("malformed_checkpoint"),
    );
    expect(() => formatCheckpoint({ ...checkpoint, size: -1 })).toThrow(code("malformed_checkpoint"));
    expect(() => formatCheckpoint({ ...checkpoint, rootHash: new Uint8Array(31) })).toThrow(
      code("malformed_checkpoint"),
    );
  });
});

/** A valid signature line over any text, to reach the checkpoint parser behind the signature check. */
function signCheckpointLine(text: string): string {
  const sig = signer.sign(new TextEncoder().encode(text));
  const id = Buffer.alloc(4);
  id.writeUInt32BE(signer.keyHash);
  return `— ${signer.name} ${Buffer.concat([id, sig]).toString("base64")}\n`;
}
