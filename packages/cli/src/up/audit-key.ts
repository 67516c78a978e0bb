import { existsSync } from "node:fs";
import path from "node:path";
import { DEFAULT_AUDIT_KEY_FILE, writeAuditKeyFile } from "@geode/audit";

/**
 * The notary's signing key for `geode up`: `GEODE_AUDIT_KEY_FILE` (default `.geode/audit.key`) as
 * an absolute path, the services' working directory being another one than ours; a key is made
 * there (mode 0600) when the file is missing, and its verifier key returned to be shown once.
 */
export function ensureAuditKey(env: NodeJS.ProcessEnv): { file: string; madeVerifierKey?: string } {
  const file = path.resolve(env["GEODE_AUDIT_KEY_FILE"] || DEFAULT_AUDIT_KEY_FILE);
  if (existsSync(file)) return { file };
  return { file, madeVerifierKey: writeAuditKeyFile(file).verifierKey };
}
