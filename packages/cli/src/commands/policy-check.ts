import { GeodeError, type PolicyMode } from "@geode/contracts";
import { type CompiledSet, checkPolicySet, schemaText } from "@geode/policy";
import type { CommandIO } from "../command.js";

/** Checks a set against the shipped schema; a refusal is printed (Cedar's message and position). */
export function checkOrExplain(
  name: string,
  text: string,
  mode: PolicyMode,
  io: CommandIO,
): CompiledSet | null {
  try {
    return checkPolicySet(name, text, mode, schemaText());
  } catch (err) {
    if (!(err instanceof GeodeError)) throw err;
    io.err(`refused: ${err.message}\n`);
    return null;
  }
}
