import { fromBase64, toBase64 } from "./base64.js";
import { AuditError, AuditErrorCode } from "./errors.js";
import { isValidKeyName, type NoteSigner, type NoteVerifier } from "./note-key.js";

/**
 * Bounds on a note read from outside, checked before any other work. The C2SP spec asks verifiers
 * to accept at least 16 signatures and warns that post-quantum ones near 5 kB; Go's note package
 * stops at 100 signatures.
 */
export const NOTE_LIMITS = { maxBytes: 256 * 1024, maxSignatures: 100 } as const;

/** One signature line of a note: who signed (name and key hash) and the base64 it carried. */
export interface NoteSignature {
  readonly name: string;
  readonly keyHash: number;
  readonly base64: string;
}

/** A note whose signature by a trusted key verified. */
export interface OpenedNote {
  /** The signed text, final newline included. */
  readonly text: string;
  /** The signatures of trusted keys, each verified (one per key). */
  readonly signatures: readonly NoteSignature[];
  /** Signatures of keys the caller does not know (a witness's, a rotated key's), not checked. */
  readonly unverified: readonly NoteSignature[];
}

const SIGNATURE_PREFIX = "\u2014 ";
const encoder = new TextEncoder();

function malformed(message: string, details: Record<string, unknown> = {}): AuditError {
  return new AuditError(AuditErrorCode.MalformedNote, message, { details });
}

/** Refuses text a note may not hold: lone surrogates (not UTF-8) and control characters but newline. */
function assertNoteChars(text: string): void {
  if (/\p{Cs}/u.test(text)) throw malformed("note is not valid UTF-8");
  if (/[\u0000-\u0009\u000b-\u001f]/.test(text)) throw malformed("note holds a control character");
}

/** A signed note: `text` (ending in a newline), a blank line, then one signature line per signer. */
export function signNote(text: string, signers: readonly NoteSigner[]): string {
  assertNoteChars(text);
  if (!text.endsWith("\n")) throw malformed("note text does not end with a newline");
  const bytes = encoder.encode(text);
  const lines = signers.map((s) => {
    if (!isValidKeyName(s.name)) throw malformed("signer has an invalid key name");
    const id = Buffer.alloc(4);
    id.writeUInt32BE(s.keyHash);
    return `${SIGNATURE_PREFIX}${s.name} ${toBase64(Buffer.concat([id, s.sign(bytes)]))}\n`;
  });
  return `${text}\n${lines.join("")}`;
}

/** The note as a string, refused when it is over the size bound or not UTF-8. */
function noteString(note: string | Uint8Array): string {
  if (typeof note === "string") {
    if (note.length > NOTE_LIMITS.maxBytes || Buffer.byteLength(note) > NOTE_LIMITS.maxBytes) {
      throw malformed("note is too large");
    }
    return note;
  }
  if (note.length > NOTE_LIMITS.maxBytes) throw malformed("note is too large");
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(note);
  } catch {
    throw malformed("note is not valid UTF-8");
  }
}

/** One signature line parsed: `— {name} {base64(key hash || signature)}`. */
function parseSignatureLine(line: string): NoteSignature & { signature: Uint8Array } {
  if (!line.startsWith(SIGNATURE_PREFIX)) throw malformed("a signature line does not start with an em dash");
  const body = line.slice(SIGNATURE_PREFIX.length);
  const space = body.indexOf(" ");
  const [name, base64] = space < 0 ? [body, ""] : [body.slice(0, space), body.slice(space + 1)];
  const raw = fromBase64(base64);
  if (!isValidKeyName(name) || !raw || raw.length < 5) throw malformed("a signature line is malformed");
  const keyHash = Buffer.from(raw.buffer, raw.byteOffset, 4).readUInt32BE(0);
  return { name, keyHash, base64, signature: raw.subarray(4) };
}

/** The text and the signature lines of a note, split at its last blank line. */
function splitNote(note: string): { text: string; lines: string[] } {
  const split = note.lastIndexOf("\n\n");
  if (split < 0) throw malformed("note has no blank line before its signatures");
  const block = note.slice(split + 2);
  if (block === "" || !block.endsWith("\n")) throw malformed("note does not end with a signature line");
  const lines = block.slice(0, -1).split("\n", NOTE_LIMITS.maxSignatures + 1);
  if (lines.length > NOTE_LIMITS.maxSignatures) throw malformed("note has too many signatures");
  return { text: note.slice(0, split + 1), lines };
}

/** The one trusted key of this name and hash, or undefined (two would make the trust list ambiguous). */
function trustedKey(
  verifiers: readonly NoteVerifier[],
  name: string,
  keyHash: number,
): NoteVerifier | undefined {
  const matches = verifiers.filter((v) => v.name === name && v.keyHash === keyHash);
  if (matches.length > 1) {
    throw new AuditError(AuditErrorCode.InvalidArgument, "two trusted keys share a name and key hash", {
      details: { name, keyHash },
    });
  }
  return matches[0];
}

/**
 * Parses a signed note and checks it against the trusted keys, as the C2SP signed-note spec and
 * Go's `note.Open` do: signatures of unknown keys are kept unverified; a trusted key's signature
 * that fails refuses the whole note (`bad_signature`); a note no trusted key signed is refused
 * (`unknown_key`); any syntax error or exceeded limit is `malformed_note`.
 */
export function openNote(note: string | Uint8Array, verifiers: readonly NoteVerifier[]): OpenedNote {
  const whole = noteString(note);
  assertNoteChars(whole);
  const { text, lines } = splitNote(whole);
  const bytes = encoder.encode(text);
  const signatures: NoteSignature[] = [];
  const unverified = new Map<string, NoteSignature>();
  for (const line of lines) {
    const { signature, ...sig } = parseSignatureLine(line);
    const key = trustedKey(verifiers, sig.name, sig.keyHash);
    if (!key) {
      unverified.set(line, sig);
      continue;
    }
    if (signatures.some((s) => s.name === sig.name && s.keyHash === sig.keyHash)) continue;
    if (!key.verify(bytes, signature)) {
      throw new AuditError(AuditErrorCode.BadSignature, "a trusted key's signature does not verify", {
        details: { name: sig.name, keyHash: sig.keyHash },
      });
    }
    signatures.push(sig);
  }
  if (signatures.length === 0)
    throw new AuditError(AuditErrorCode.UnknownKey, "no trusted key signed the note");
  return { text, signatures, unverified: [...unverified.values()] };
}
