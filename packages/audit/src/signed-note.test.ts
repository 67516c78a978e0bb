/**
 * The signed-note format against Go's own: the keys and notes of golang.org/x/mod's
 * `sumdb/note/note_test.go` (commit fe2ec04f7c3c3aa6fad97631aafcff6e49e2d1db), produced by Go's
 * `note.Sign`, and the example of the C2SP signed-note spec (c2sp.org/signed-note).
 */
import { describe, expect, it } from "vitest";
import { generateNoteKey, noteKeyHash, noteSigner, noteVerifier } from "./note-key.js";
import { NOTE_LIMITS, openNote, signNote } from "./signed-note.js";

const PETER_SKEY = "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz";
const PETER_VKEY = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW";
const ENOCH_VKEY = "EnochRoot+af0cfe78+ATtqJ7zOtqQtYqOo0CpvDXNlMhV3HeJDpjrASKGLWdop";
const TEXT =
  "If you think cryptography is the answer to your problem,\nthen you don't know what your problem is.\n";
const PETER_SIG =
  "— PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n";
const ENOCH_SIG =
  "— EnochRoot rwz+eBzmZa0SO3NbfRGzPCpDckykFXSdeX+MNtCOXm2/5n2tiOHp+vAF1aGrQ5ovTG01oOTGwnWLox33WWd1RvMc+QQ=\n";

const peter = noteVerifier(PETER_VKEY);
const enoch = noteVerifier(ENOCH_VKEY);
const code = (c: string) => expect.objectContaining({ code: c });

describe("note keys", () => {
  it("reads Go's signer key and derives Go's verifier key from it", () => {
    const signer = noteSigner(PETER_SKEY);
    expect(signer.name).toBe("PeterNeumann");
    expect(signer.keyHash).toBe(0xc74f20a3);
    expect(signer.verifierKey).toBe(PETER_VKEY);
    expect(peter.keyHash).toBe(0xc74f20a3);
  });

  it("refuses every substring and every one-byte change of Go's keys (as note_test.go does)", () => {
    for (const [key, parse] of [
      [PETER_VKEY, noteVerifier],
      [PETER_SKEY, noteSigner],
    ] as const) {
      for (let i = 0; i <= key.length; i++) {
        for (let j = i + 1; j <= key.length; j++) {
          if (i !== 0 || j !== key.length)
            expect(() => parse(key.slice(i, j))).toThrow(code("malformed_key"));
        }
      }
      for (let i = 0; i < key.length; i++) {
        const changed = key.slice(0, i) + String.fromCharCode(key.charCodeAt(i) + 1) + key.slice(i + 1);
        expect(() => parse(changed)).toThrow(code("malformed_key"));
      }
    }
    // From note_test.go: a key of the wrong length and an unknown algorithm, each with a matching hash.
    expect(() =>
      noteVerifier("PeterNeumann+cc469956+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TWBADKEY=="),
    ).toThrow(code("malformed_key"));
    expect(() => noteVerifier("PeterNeumann+173116ae+ZRpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW")).toThrow(
      code("malformed_key"),
    );
  });

  it("generates keys in the note format that sign and verify each other", () => {
    const { signerKey, verifierKey } = generateNoteKey("geode/test");
    expect(signerKey).toMatch(/^PRIVATE\+KEY\+geode\/test\+[0-9a-f]{8}\+[A-Za-z0-9+/]{44}$/);
    expect(verifierKey).toMatch(/^geode\/test\+[0-9a-f]{8}\+[A-Za-z0-9+/]{44}$/);
    const signer = noteSigner(signerKey);
    expect(signer.verifierKey).toBe(verifierKey);
    const verifier = noteVerifier(verifierKey);
    const publicKey = Buffer.from(verifierKey.split("+").slice(2).join("+"), "base64").subarray(1);
    expect(verifier.keyHash).toBe(noteKeyHash("geode/test", publicKey));
    const text = new TextEncoder().encode("hi\n");
    expect(verifier.verify(text, signer.sign(text))).toBe(true);
    expect(() => generateNoteKey("has space")).toThrow(code("invalid_argument"));
    expect(() => generateNoteKey("a+b")).toThrow(code("invalid_argument"));
  });
});

describe("signed notes", () => {
  it("signs exactly as Go's note.Sign does", () => {
    expect(signNote(TEXT, [noteSigner(PETER_SKEY)])).toBe(`${TEXT}\n${PETER_SIG}`);
  });

  it("opens Go's notes: trusted signatures verified, others kept unverified", () => {
    const note = `${TEXT}\n${PETER_SIG}${ENOCH_SIG}`;
    const one = openNote(note, [peter]);
    expect(one.text).toBe(TEXT);
    expect(one.signatures).toEqual([
      { name: "PeterNeumann", keyHash: 0xc74f20a3, base64: PETER_SIG.slice(15, -1) },
    ]);
    expect(one.unverified.map((s) => [s.name, s.keyHash])).toEqual([["EnochRoot", 0xaf0cfe78]]);
    const both = openNote(new TextEncoder().encode(note), [peter, enoch]);
    expect(both.signatures.map((s) => s.name)).toEqual(["PeterNeumann", "EnochRoot"]);
    expect(both.unverified).toEqual([]);
  });

  it("verifies the C2SP spec's example note", () => {
    const vkey = noteVerifier("example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k");
    const note =
      "This is an example message.\n\n— example.com/foo Uw2QOkn8srV1yJGh2VYRlL1Tnagv1YEq6TfXppzi2ONncAlTgK7Ztg1ERYNZXsYjOBH3mFXmRKuwHjG1Yu72IneyaQM=\n";
    expect(openNote(note, [vkey]).text).toBe("This is an example message.\n");
  });

  it("refuses a note no trusted key signed", () => {
    expect(() => openNote(`${TEXT}\n${PETER_SIG}${ENOCH_SIG}`, [])).toThrow(code("unknown_key"));
    const other = noteVerifier(generateNoteKey("PeterNeumann").verifierKey);
    expect(() => openNote(`${TEXT}\n${PETER_SIG}`, [other])).toThrow(code("unknown_key"));
  });

  it("refuses a tampered body or signature with bad_signature", () => {
    const tampered = `${TEXT.replace("answer", "answers")}\n${PETER_SIG}`;
    expect(() => openNote(tampered, [peter])).toThrow(code("bad_signature"));
    const badSig = `${TEXT}\n${PETER_SIG.slice(0, 60)}ABCD${PETER_SIG.slice(60)}`;
    expect(() => openNote(badSig, [peter])).toThrow(code("bad_signature"));
    // An unknown key's bad signature is only kept unverified, as the spec wants.
    expect(
      openNote(`${TEXT}\n${PETER_SIG}${ENOCH_SIG.slice(0, 60)}ABCD${ENOCH_SIG.slice(60)}`, [peter])
        .unverified,
    ).toHaveLength(1);
  });

  it("refuses malformed notes (Go's list, and more)", () => {
    const bad = [
      TEXT,
      `${TEXT}\n`,
      `${TEXT}\n${PETER_SIG.slice(0, -1)}`,
      `\x01${TEXT}\n${PETER_SIG}`,
      `${TEXT}\n— Bad Name x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=`,
      `${TEXT}\n${PETER_SIG}Unexpected line.\n`,
      `${TEXT}\n${PETER_SIG.replace("— ", "- ")}`,
      `${TEXT}\n${PETER_SIG.replace("x08go", "x08g")}`,
      `${TEXT}\n— PeterNeumann\n`,
      `${TEXT}\n— PeterNeumann x08=\n`,
      `${TEXT}\r\n${PETER_SIG}`,
      `\ud800${TEXT}\n${PETER_SIG}`,
      `${TEXT}\n${PETER_SIG.slice(0, 40)}\n`,
    ];
    for (const note of bad) expect(() => openNote(note, [peter])).toThrow(code("malformed_note"));
    expect(() =>
      openNote(Uint8Array.of(0xff, ...new TextEncoder().encode(`${TEXT}\n${PETER_SIG}`)), [peter]),
    ).toThrow(code("malformed_note"));
  });

  it("refuses over-long notes and too many signatures before verifying any", () => {
    expect(() => openNote(`${TEXT}\n${PETER_SIG.repeat(101)}`, [peter])).toThrow(code("malformed_note"));
    expect(openNote(`${TEXT}\n${PETER_SIG.repeat(16)}`, [peter]).signatures).toHaveLength(1);
    const huge = `${"x".repeat(NOTE_LIMITS.maxBytes)}\n\n${PETER_SIG}`;
    expect(() => openNote(huge, [peter])).toThrow(code("malformed_note"));
    expect(() => openNote(new TextEncoder().encode(huge), [peter])).toThrow(code("malformed_note"));
    // Multi-byte characters count as their UTF-8 bytes.
    expect(() => openNote(`${"é".repeat(NOTE_LIMITS.maxBytes / 2)}\n\n${PETER_SIG}`, [peter])).toThrow(
      code("malformed_note"),
    );
  });

  it("refuses to sign text that a note cannot hold", () => {
    const signer = noteSigner(PETER_SKEY);
    expect(() => signNote("no final newline", [signer])).toThrow(code("malformed_note"));
    expect(() => signNote("tab\there\n", [signer])).toThrow(code("malformed_note"));
  });
});
