import { hash } from "node:crypto";
import { AuditError, AuditErrorCode } from "./errors.js";
import { sha256 } from "./tree-hash.js";

/** The first line of every leaf: a new leaf format gets a new version, never a changed meaning. */
export const AUDIT_LEAF_VERSION = "geode-audit-leaf-v1";

/** The data hash of a leaf that stands for a missing stream sequence (a deleted message). */
export const DELETED_DATA_HASH = "deleted";

/** The fields of one leaf: one stream message, or the gap a deleted one left. */
export interface AuditLeaf {
  /** The stream sequence. */
  readonly seq: number;
  /** The message's subject; empty in a gap leaf. */
  readonly subject: string;
  /** The message's `Nats-Msg-Id` header; empty when it has none, and in a gap leaf. */
  readonly msgId: string;
  /** Lower-case hex SHA-256 of the message data, or {@link DELETED_DATA_HASH}. */
  readonly dataHash: string;
}

const HEX_SHA256 = /^[0-9a-f]{64}$/;
const UTF8 = new TextEncoder();
const DECIMAL = /^[1-9][0-9]*$/;

/** What every leaf hash input starts with: RFC 6962's leaf prefix 0x00, then the version line. */
const LEAF_HASH_PREFIX = `\u0000${AUDIT_LEAF_VERSION}\n`;

function refuse(message: string, details: Record<string, unknown> = {}): AuditError {
  return new AuditError(AuditErrorCode.InvalidArgument, message, { details });
}

/** The leaf of one stream message. */
export function messageLeaf(m: {
  seq: number;
  subject: string;
  msgId?: string;
  data: Uint8Array;
}): AuditLeaf {
  const dataHash = hash("sha256", m.data, "hex");
  return { seq: m.seq, subject: m.subject, msgId: m.msgId ?? "", dataHash };
}

/** The leaf the notary appends for a stream sequence that is gone: no subject, no id, data `deleted`. */
export function gapLeaf(seq: number): AuditLeaf {
  return { seq, subject: "", msgId: "", dataHash: DELETED_DATA_HASH };
}

/**
 * The leaf's bytes, which the tree hashes: `geode-audit-leaf-v1\n{seq}\n{subject}\n{msgId}\n{data
 * hash}` (DESIGN section 20), no trailing newline. Refuses fields that would make two leaves read
 * alike (a newline in the subject or id, a sequence that is not a positive integer).
 */
export function encodeAuditLeaf(leaf: AuditLeaf): Uint8Array {
  if (!Number.isSafeInteger(leaf.seq) || leaf.seq < 1)
    throw refuse("seq must be a positive integer", { seq: leaf.seq });
  if (leaf.subject.includes("\n") || leaf.msgId.includes("\n"))
    throw refuse("subject and msgId must be one line");
  if (leaf.dataHash !== DELETED_DATA_HASH && !HEX_SHA256.test(leaf.dataHash)) {
    throw refuse("dataHash must be lower-case hex SHA-256 or `deleted`");
  }
  const text = [AUDIT_LEAF_VERSION, String(leaf.seq), leaf.subject, leaf.msgId, leaf.dataHash].join("\n");
  return UTF8.encode(text);
}

/**
 * The leaf hash of one stream message, `leafHash(encodeAuditLeaf(messageLeaf(m)))` in one step:
 * the leaf is hashed as a string (Node encodes it as UTF-8 while hashing), with none of the
 * intermediate objects and copies, since the notary and `verify` take it once per message.
 */
export function messageLeafHash(m: {
  seq: number;
  subject: string;
  msgId?: string;
  data: Uint8Array;
}): Uint8Array {
  const msgId = m.msgId ?? "";
  if (!Number.isSafeInteger(m.seq) || m.seq < 1)
    throw refuse("seq must be a positive integer", { seq: m.seq });
  if (m.subject.includes("\n") || msgId.includes("\n")) throw refuse("subject and msgId must be one line");
  return sha256(`${LEAF_HASH_PREFIX}${m.seq}\n${m.subject}\n${msgId}\n${hash("sha256", m.data, "hex")}`);
}

/** The fields of a leaf's bytes; refuses anything {@link encodeAuditLeaf} would not have written. */
export function decodeAuditLeaf(bytes: Uint8Array): AuditLeaf {
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch (cause) {
    throw new AuditError(AuditErrorCode.InvalidArgument, "leaf is not UTF-8", { cause });
  }
  const [version, seq, subject, msgId, dataHash, ...more] = text.split("\n");
  if (
    version !== AUDIT_LEAF_VERSION ||
    more.length > 0 ||
    dataHash === undefined ||
    !DECIMAL.test(seq ?? "")
  ) {
    throw refuse(`not a ${AUDIT_LEAF_VERSION} leaf`);
  }
  const leaf = { seq: Number(seq), subject: subject!, msgId: msgId!, dataHash };
  encodeAuditLeaf(leaf);
  return leaf;
}
