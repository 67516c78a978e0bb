/**
 * Why an audit input was refused. Stable strings: the notary puts them in its error replies and
 * `geode audit` prints them, so a caller branches on the code, never on the message.
 */
export const AuditErrorCode = {
  /** An argument out of its domain: a negative size, an index past the tree, a leaf field with a newline. */
  InvalidArgument: "invalid_argument",
  /** A proof of the wrong length or shape for its sizes (a proof that merely does not match is `false`). */
  InvalidProof: "invalid_proof",
  /** A hash store that lacks a complete subtree a proof needs. */
  MissingNode: "missing_node",
  /** A stored frontier that does not describe a tree of its size. */
  MalformedFrontier: "malformed_frontier",
  /** A signed note that breaks the C2SP signed-note syntax or its size limits. */
  MalformedNote: "malformed_note",
  /** A note text that is not a checkpoint `{origin}\n{size}\n{base64 root}\n`. */
  MalformedCheckpoint: "malformed_checkpoint",
  /** A checkpoint of another log than the one asked for. */
  WrongOrigin: "wrong_origin",
  /** A signer or verifier key string that is not in the note format, or whose key hash is wrong. */
  MalformedKey: "malformed_key",
  /** A key file that exists already where a new key was to be written. */
  KeyFileExists: "key_file_exists",
  /** A note with no signature by any of the keys the caller trusts. */
  UnknownKey: "unknown_key",
  /** A note whose signature by a trusted key does not verify. */
  BadSignature: "bad_signature",
} as const;
export type AuditErrorCode = (typeof AuditErrorCode)[keyof typeof AuditErrorCode];

/** An audit input refused, with a stable code; context goes in `details`, not in the message. */
export class AuditError extends Error {
  override readonly name: string = "AuditError";
  readonly code: AuditErrorCode;
  readonly details: Readonly<Record<string, unknown>>;

  constructor(
    code: AuditErrorCode,
    message: string,
    options: { cause?: unknown; details?: Record<string, unknown> } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.details = options.details ?? {};
  }
}
