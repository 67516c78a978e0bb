import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { verifierOption } from "../audit/audit-options.js";
import { checkProof, type MessageFile, type ProofFile } from "../audit/proof-file.js";
import { type CommandModule, UsageError } from "../command.js";

function readJson<T>(file: string, what: string): T {
  try {
    return JSON.parse(readFileSync(file, "utf8")) as T;
  } catch (err) {
    throw new UsageError(`${what} ${file} is not readable JSON: ${(err as Error).message}`);
  }
}

/**
 * `geode audit check-proof FILE --key VKEY [--message FILE]`: checks an inclusion proof offline
 * (no plane, NATS or Postgres: this module imports none of them): the checkpoint's signature by
 * the key, the path to its root, and with `--message` that the message is the proven leaf.
 */
export const auditCheckProofCommand: CommandModule = {
  async run(args, io) {
    const { values, positionals } = parseArgs({
      args,
      allowPositionals: true,
      options: { key: { type: "string" }, message: { type: "string" } },
    });
    const [file, ...rest] = positionals;
    if (file === undefined || rest.length > 0) throw new UsageError("give exactly one proof file");
    if (values.key === undefined) throw new UsageError("give the verifier key with --key VKEY");
    const verifier = verifierOption(values.key, io.env, false);
    const proof = readJson<ProofFile>(file, "proof");
    const message =
      values.message === undefined ? undefined : readJson<MessageFile>(values.message, "message");
    const why = checkProof(proof, verifier, message);
    if (why) {
      io.out(`invalid: ${why}\n`);
      return 1;
    }
    io.out(
      `ok: seq ${proof.seq} is leaf ${proof.leaf_index} of the ${proof.tree_size}-leaf tree of log ${proof.log}, signed by ${verifier.name}${message ? ", and the message is that leaf" : ""}\n`,
    );
    return 0;
  },
};
