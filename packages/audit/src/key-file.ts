import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { AuditError, AuditErrorCode } from "./errors.js";
import { generateNoteKey, type NoteSigner, noteSigner } from "./note-key.js";

/** Where the notary reads its key when `GEODE_AUDIT_KEY_FILE` is unset, and where `geode up` makes one. */
export const DEFAULT_AUDIT_KEY_FILE = ".geode/audit.key";

/** The name of a key made without one (`geode up`, `geode audit keygen` without `--name`). */
export const DEFAULT_AUDIT_KEY_NAME = "geode-notary";

/** Bounds what is read as a key file: one key line is about 120 bytes. */
const MAX_KEY_FILE_BYTES = 4096;

/**
 * Writes a new Ed25519 signing key to `file`: one line, the signer key in the format of Go's
 * `golang.org/x/mod/sumdb/note` (`PRIVATE+KEY+{name}+{hash}+{base64}`), mode 0600, its directory
 * made when missing. Never overwrites a file that exists (`key_file_exists`): a key replaced by
 * accident would leave every checkpoint signed so far without its verifier. Returns the verifier
 * key to publish.
 */
export function writeAuditKeyFile(
  file: string,
  name: string = DEFAULT_AUDIT_KEY_NAME,
): { verifierKey: string } {
  const { signerKey, verifierKey } = generateNoteKey(name);
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  try {
    writeFileSync(file, `${signerKey}\n`, { mode: 0o600, flag: "wx" });
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code === "EEXIST")
      throw new AuditError(AuditErrorCode.KeyFileExists, "the key file exists already", { cause });
    throw cause;
  }
  return { verifierKey };
}

/**
 * The signer of a key file {@link writeAuditKeyFile} wrote (its first non-empty line; surrounding
 * blanks are ignored, so a compose secret with a trailing newline reads alike). `malformed_key`
 * when it holds no signer key; the file system's error when it cannot be read.
 */
export function readAuditKeyFile(file: string): NoteSigner {
  const text = readFileSync(file, "utf8");
  if (text.length > MAX_KEY_FILE_BYTES)
    throw new AuditError(AuditErrorCode.MalformedKey, "the key file is too large for a key");
  const line = text.split("\n").find((l) => l.trim() !== "");
  return noteSigner((line ?? "").trim());
}
