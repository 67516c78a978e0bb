import { parseArgs } from "node:util";
import {
  AuditError,
  AuditErrorCode,
  DEFAULT_AUDIT_KEY_NAME,
  isValidKeyName,
  readAuditKeyFile,
  writeAuditKeyFile,
} from "@geode/audit";
import { auditKeyFile } from "../audit/audit-options.js";
import { type CommandModule, UsageError } from "../command.js";

/**
 * `geode audit keygen [--out FILE] [--name NAME]`: a new Ed25519 signing key for the notary,
 * written mode 0600 (never over a file that exists), and its verifier key alone on the last line,
 * to hand to whoever checks the checkpoints.
 */
export const auditKeygenCommand: CommandModule = {
  async run(args, io) {
    const { values } = parseArgs({
      args,
      options: { out: { type: "string" }, name: { type: "string" } },
    });
    const name = values.name ?? DEFAULT_AUDIT_KEY_NAME;
    if (!isValidKeyName(name)) throw new UsageError(`--name must be one word without '+', got ${name}`);
    const file = values.out ?? auditKeyFile(io.env);
    try {
      const { verifierKey } = writeAuditKeyFile(file, name);
      io.out(`wrote the private key to ${file} (mode 0600); the verifier key:\n${verifierKey}\n`);
      return 0;
    } catch (err) {
      if (err instanceof AuditError && err.code === AuditErrorCode.KeyFileExists) {
        io.err(`geode audit keygen: ${file} exists already; it is never overwritten (give --out)\n`);
        return 1;
      }
      throw err;
    }
  },
};

/** `geode audit key`: the verifier key of GEODE_AUDIT_KEY_FILE (default `.geode/audit.key`). */
export const auditKeyCommand: CommandModule = {
  async run(args, io) {
    parseArgs({ args, options: {} });
    const file = auditKeyFile(io.env);
    let verifierKey: string;
    try {
      verifierKey = readAuditKeyFile(file).verifierKey;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") {
        io.err(
          `geode audit key: no key file at ${file}\n  set GEODE_AUDIT_KEY_FILE, or make one with 'geode audit keygen'\n`,
        );
        return 1;
      }
      throw err;
    }
    io.out(`${verifierKey}\n`);
    return 0;
  },
};
