import { fromBase64, toBase64 } from "./base64.js";
import { AuditError, AuditErrorCode } from "./errors.js";
import type { NoteSigner, NoteVerifier } from "./note-key.js";
import { NOTE_LIMITS, type OpenedNote, openNote, signNote } from "./signed-note.js";
import { HASH_SIZE } from "./tree-hash.js";

/** A log's tree head: its origin (the log's name), its size and its root hash. */
export interface Checkpoint {
  readonly origin: string;
  readonly size: number;
  readonly rootHash: Uint8Array;
}

const DECIMAL = /^(?:0|[1-9][0-9]*)$/;

function malformed(message: string): AuditError {
  return new AuditError(AuditErrorCode.MalformedCheckpoint, message);
}

/** Refuses an origin that is empty, more than one line, or holds a control character. */
function assertOrigin(origin: string): void {
  if (origin === "" || /[\u0000-\u001f]|\p{Cs}/u.test(origin))
    throw malformed("origin must be one non-empty line");
}

/**
 * The checkpoint's note text (C2SP tlog-checkpoint): `{origin}\n{size}\n{base64 root hash}\n`.
 * No extension lines: log monitors cannot audit them.
 */
export function formatCheckpoint({ origin, size, rootHash }: Checkpoint): string {
  assertOrigin(origin);
  if (!Number.isSafeInteger(size) || size < 0) throw malformed("size must be a non-negative safe integer");
  if (rootHash.length !== HASH_SIZE) throw malformed("root hash must be 32 bytes");
  return `${origin}\n${size}\n${toBase64(rootHash)}\n`;
}

/**
 * The checkpoint a note text holds, refused unless it is exactly what {@link formatCheckpoint}
 * writes: a canonical decimal size (no sign, no leading zero) within safe integers, a canonical
 * base64 hash of 32 bytes, and no extension lines (this log never writes them).
 */
export function parseCheckpoint(text: string): Checkpoint {
  if (text.length > NOTE_LIMITS.maxBytes) throw malformed("checkpoint is too large");
  const lines = text.split("\n", 5);
  const [origin, size, root, end, ...more] = lines;
  if (lines.length !== 4 || end !== "" || more.length > 0) {
    throw malformed("checkpoint is not three lines {origin}, {size}, {root hash}");
  }
  assertOrigin(origin!);
  const n = Number(size);
  if (!DECIMAL.test(size!) || !Number.isSafeInteger(n))
    throw malformed("tree size is not a canonical decimal");
  const rootHash = fromBase64(root!);
  if (!rootHash || rootHash.length !== HASH_SIZE) throw malformed("root hash is not base64 of 32 bytes");
  return { origin: origin!, size: n, rootHash };
}

/** The checkpoint as a signed note, signed by `signer`. */
export function signCheckpoint(checkpoint: Checkpoint, signer: NoteSigner): string {
  return signNote(formatCheckpoint(checkpoint), [signer]);
}

/**
 * A signed checkpoint checked: its signature by a trusted key ({@link openNote}'s refusals), its
 * text a checkpoint, and, when `origin` is given, of that log (`wrong_origin` otherwise).
 */
export function openCheckpoint(
  note: string | Uint8Array,
  { verifiers, origin }: { verifiers: readonly NoteVerifier[]; origin?: string },
): { checkpoint: Checkpoint; note: OpenedNote } {
  const opened = openNote(note, verifiers);
  const checkpoint = parseCheckpoint(opened.text);
  if (origin !== undefined && checkpoint.origin !== origin) {
    throw new AuditError(AuditErrorCode.WrongOrigin, "the checkpoint is of another log", {
      details: { origin: checkpoint.origin, expected: origin },
    });
  }
  return { checkpoint, note: opened };
}
