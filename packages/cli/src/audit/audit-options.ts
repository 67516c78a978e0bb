import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { DEFAULT_AUDIT_KEY_FILE, type NoteVerifier, noteVerifier, readAuditKeyFile } from "@geode/audit";
import { UsageError } from "../command.js";

/** The two logs of DESIGN section 20 (as `AUDIT_LOGS` of @geode/contracts, kept here so offline commands import no contracts). */
const LOGS = ["events", "timeline"] as const;
export type LogName = (typeof LOGS)[number];

/** `--log events|timeline`, or every log when absent. */
export function logsOption(value: string | undefined): LogName[] {
  if (value === undefined) return [...LOGS];
  if (!(LOGS as readonly string[]).includes(value))
    throw new UsageError(`--log must be events or timeline, got ${value}`);
  return [value as LogName];
}

/** `--log events|timeline`, events when absent. */
export function oneLogOption(value: string | undefined): LogName {
  return logsOption(value ?? "events")[0]!;
}

/** The key file the notary signs with: GEODE_AUDIT_KEY_FILE, else `.geode/audit.key`. */
export function auditKeyFile(env: NodeJS.ProcessEnv): string {
  return path.resolve(env["GEODE_AUDIT_KEY_FILE"] || DEFAULT_AUDIT_KEY_FILE);
}

/**
 * The verifier of `--key`: a verifier key (`{name}+{hash}+{base64}`) or a file holding one on its
 * last non-empty line (what `geode audit keygen` prints). Without `--key`, `orKeyFile` decides:
 * the verifier key of GEODE_AUDIT_KEY_FILE when it exists (the operator's own check), else a usage
 * error.
 */
export function verifierOption(
  value: string | undefined,
  env: NodeJS.ProcessEnv,
  orKeyFile: boolean,
): NoteVerifier {
  if (value === undefined) {
    const file = auditKeyFile(env);
    if (orKeyFile && existsSync(file)) return noteVerifier(readAuditKeyFile(file).verifierKey);
    throw new UsageError(
      orKeyFile
        ? `give the verifier key with --key VKEY (no key file at ${file})`
        : "give the verifier key with --key VKEY",
    );
  }
  let text = value.trim();
  if (!text.includes("+") && existsSync(text)) {
    const lines = readFileSync(text, "utf8")
      .split("\n")
      .filter((l) => l.trim() !== "");
    text = (lines.at(-1) ?? "").trim();
  }
  if (text.startsWith("PRIVATE+KEY+"))
    throw new UsageError("--key takes the verifier key, not the private key");
  try {
    return noteVerifier(text);
  } catch (err) {
    throw new UsageError(`--key is not a verifier key: ${(err as Error).message}`);
  }
}
