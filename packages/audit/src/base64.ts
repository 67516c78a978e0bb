/** Standard base64 (RFC 4648 section 4) with padding, the encoding of notes, keys and proofs. */
export function toBase64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64");
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * The bytes of a canonical standard base64 string, or null. Node's own decoder skips what it does
 * not know; this one refuses any other character, missing padding and non-zero trailing bits, so
 * one value has one spelling.
 */
export function fromBase64(text: string): Uint8Array | null {
  if (!BASE64.test(text)) return null;
  const bytes = Buffer.from(text, "base64");
  return bytes.toString("base64") === text ? new Uint8Array(bytes) : null;
}
