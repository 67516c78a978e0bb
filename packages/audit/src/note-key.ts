import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  type KeyObject,
  sign,
  verify,
} from "node:crypto";
import { fromBase64, toBase64 } from "./base64.js";
import { AuditError, AuditErrorCode } from "./errors.js";

/** A key that signs notes: its name and key hash, as its signature lines carry them. */
export interface NoteSigner {
  readonly name: string;
  /** The 32-bit key ID (big-endian first 4 bytes of the signature). */
  readonly keyHash: number;
  /** Its verifier key string, `{name}+{hash}+{base64(0x01 || public key)}`. */
  readonly verifierKey: string;
  sign(text: Uint8Array): Uint8Array;
}

/** A trusted key that checks note signatures. */
export interface NoteVerifier {
  readonly name: string;
  readonly keyHash: number;
  verify(text: Uint8Array, signature: Uint8Array): boolean;
}

/** The signature type byte of Ed25519 in signed notes. */
const ALG_ED25519 = 0x01;
/** Bounds a key string before any parsing: real ones are far shorter. */
const MAX_KEY_LENGTH = 1024;
// DER wrappings of raw Ed25519 keys (RFC 8410), the one raw form node:crypto imports.
const PKCS8_PREFIX = Buffer.from("302e020100300506032b657004220420", "hex");
const SPKI_PREFIX = Buffer.from("302a300506032b6570032100", "hex");

/** A key name as signed notes allow it: non-empty, well-formed, no Unicode space, no `+`. */
export function isValidKeyName(name: string): boolean {
  return name.length > 0 && !/[\p{White_Space}+]|\p{Cs}/u.test(name);
}

/** The key ID of an Ed25519 key: the first 4 bytes of `SHA-256(name || "\n" || 0x01 || public key)`. */
export function noteKeyHash(name: string, publicKey: Uint8Array): number {
  const digest = createHash("sha256")
    .update(name)
    .update("\n")
    .update(Uint8Array.of(ALG_ED25519))
    .update(publicKey);
  return digest.digest().readUInt32BE(0);
}

const hex8 = (n: number) => n.toString(16).padStart(8, "0");
const rawPublic = (key: KeyObject) => Buffer.from(key.export({ format: "jwk" }).x!, "base64url");

function keyString(name: string, hash: number, keyBytes: Uint8Array): string {
  return `${name}+${hex8(hash)}+${toBase64(Uint8Array.of(ALG_ED25519, ...keyBytes))}`;
}

function malformed(message: string): AuditError {
  return new AuditError(AuditErrorCode.MalformedKey, message);
}

/** `{name}+{8 hex}+{base64}` split and checked, the key bytes without their type byte. */
function parseKeyString(text: string): { name: string; hash: number; key: Uint8Array } {
  if (text.length > MAX_KEY_LENGTH) throw malformed("key is too long");
  const [name, hash16, key64] = cut(text, 3);
  const key = fromBase64(key64 ?? "");
  if (!name || !isValidKeyName(name) || !/^[0-9a-f]{8}$/.test(hash16 ?? "") || !key || key.length === 0) {
    throw malformed("key is not {name}+{8 hex}+{base64}");
  }
  if (key[0] !== ALG_ED25519) throw malformed("key is not an Ed25519 key");
  if (key.length !== 33) throw malformed("Ed25519 key is not 32 bytes");
  return { name, hash: Number.parseInt(hash16!, 16), key: key.subarray(1) };
}

/** The first `parts - 1` `+`-separated fields, then the rest (base64 may hold `+`). */
function cut(text: string, parts: number): string[] {
  const out: string[] = [];
  let rest = text;
  for (let i = 1; i < parts; i++) {
    const at = rest.indexOf("+");
    if (at < 0) return [...out, rest];
    out.push(rest.slice(0, at));
    rest = rest.slice(at + 1);
  }
  return [...out, rest];
}

/** A verifier from a verifier key string; throws `malformed_key` when its format or hash is wrong. */
export function noteVerifier(verifierKey: string): NoteVerifier {
  const { name, hash, key } = parseKeyString(verifierKey);
  if (hash !== noteKeyHash(name, key)) throw malformed("key hash does not match the key");
  let publicKey: KeyObject;
  try {
    publicKey = createPublicKey({ key: Buffer.concat([SPKI_PREFIX, key]), format: "der", type: "spki" });
  } catch (cause) {
    throw new AuditError(AuditErrorCode.MalformedKey, "not an Ed25519 public key", { cause });
  }
  return { name, keyHash: hash, verify: (text, signature) => verifyEd25519(publicKey, text, signature) };
}

function verifyEd25519(key: KeyObject, text: Uint8Array, signature: Uint8Array): boolean {
  try {
    return signature.length === 64 && verify(null, text, key, signature);
  } catch {
    return false;
  }
}

/**
 * A signer from a signer key string in the format of Go's `golang.org/x/mod/sumdb/note`:
 * `PRIVATE+KEY+{name}+{hash}+{base64(0x01 || 32-byte seed)}`; throws `malformed_key`.
 */
export function noteSigner(signerKey: string): NoteSigner {
  if (!signerKey.startsWith("PRIVATE+KEY+")) throw malformed("signer key does not start with PRIVATE+KEY+");
  const { name, hash, key: seed } = parseKeyString(signerKey.slice("PRIVATE+KEY+".length));
  const privateKey = createPrivateKey({
    key: Buffer.concat([PKCS8_PREFIX, seed]),
    format: "der",
    type: "pkcs8",
  });
  const publicKey = rawPublic(createPublicKey(privateKey));
  if (hash !== noteKeyHash(name, publicKey)) throw malformed("key hash does not match the key");
  return {
    name,
    keyHash: hash,
    verifierKey: keyString(name, hash, publicKey),
    sign: (text) => new Uint8Array(sign(null, text, privateKey)),
  };
}

/** A new Ed25519 key named `name`: the signer key (secret) and the verifier key to publish. */
export function generateNoteKey(name: string): { signerKey: string; verifierKey: string } {
  if (!isValidKeyName(name)) throw new AuditError(AuditErrorCode.InvalidArgument, "not a valid key name");
  const { privateKey, publicKey } = generateKeyPairSync("ed25519");
  const seed = Buffer.from(privateKey.export({ format: "jwk" }).d!, "base64url");
  const hash = noteKeyHash(name, rawPublic(publicKey));
  return {
    signerKey: `PRIVATE+KEY+${keyString(name, hash, seed)}`,
    verifierKey: keyString(name, hash, rawPublic(publicKey)),
  };
}
