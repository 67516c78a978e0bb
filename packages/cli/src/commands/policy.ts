import { readFile } from "node:fs/promises";
import { userInfo } from "node:os";
import { parseArgs } from "node:util";
import { connectBus, loadConfig } from "@geode/bus";
import {
  names as buildNames,
  type PolicyMode,
  PolicyModeSchema,
  PolicySetNameSchema,
  policyRecord,
} from "@geode/contracts";
import { packNames, packSummary, packText, schemaText } from "@geode/policy";
import { PolicyStore } from "@geode/state";
import { type CommandIO, type CommandModule, UsageError } from "../command.js";
import { renderTable } from "../render-table.js";
import { checkOrExplain } from "./policy-check.js";

async function withPolicies<T>(io: CommandIO, body: (store: PolicyStore) => Promise<T>): Promise<T> {
  const config = loadConfig(io.env);
  const nc = await connectBus(config, "geode-policy");
  try {
    return await body(await PolicyStore.open({ nc, names: buildNames(config.namespace) }));
  } finally {
    await nc.close();
  }
}

function setName(value: string | undefined): string {
  if (value === undefined) throw new UsageError("give a policy set name");
  const parsed = PolicySetNameSchema.safeParse(value);
  if (!parsed.success) throw new UsageError(`policy set names match [a-z0-9][a-z0-9_-]{0,63}, got ${value}`);
  return parsed.data;
}

function modeOf(value: string | undefined): PolicyMode {
  const parsed = PolicyModeSchema.safeParse(value ?? "enforce");
  if (!parsed.success) throw new UsageError(`--mode is audit or enforce, got ${value}`);
  return parsed.data;
}

/** A pack's text, or a UsageError naming the packs there are. */
export function packOrRefuse(name: string): string {
  const text = packText(name);
  if (text === null) throw new UsageError(`no pack ${name}; the packs: ${packNames().join(", ")}`);
  return text;
}

/**
 * `geode policy add NAME FILE [--mode audit|enforce]` or `geode policy add --pack PACK [--mode …]`:
 * checks the text against the schema (refused with Cedar's message and position, nothing written)
 * and stores it in KV `{ns}_policies`, where the policy-guard picks it up within a second.
 */
export const policyAddCommand: CommandModule = {
  async run(args, io) {
    const { values, positionals } = parseArgs({
      args,
      allowPositionals: true,
      options: { pack: { type: "string" }, mode: { type: "string" } },
    });
    const mode = modeOf(values.mode);
    let name: string;
    let text: string;
    if (values.pack !== undefined) {
      if (positionals.length > 0) throw new UsageError("give either --pack PACK or NAME FILE");
      name = setName(values.pack);
      text = packOrRefuse(name);
    } else {
      if (positionals.length !== 2) throw new UsageError("give a set name and a policy file");
      name = setName(positionals[0]);
      text = await readFile(positionals[1] as string, "utf8").catch((err: Error) => {
        throw new UsageError(`${positionals[1]}: ${err.message}`);
      });
    }
    if (!checkOrExplain(name, text, mode, io)) return 1;
    const record = policyRecord(name, text, mode, updatedBy(io));
    await withPolicies(io, (store) => store.put(record));
    io.out(`policy set ${name} stored (${mode}, sha256 ${record.sha256.slice(0, 12)})\n`);
    return 0;
  },
};

/** Who wrote a set: `GEODE_OPERATOR`, else the login name. */
function updatedBy(io: CommandIO): string {
  const named = io.env["GEODE_OPERATOR"];
  if (named) return named.slice(0, 128);
  try {
    return userInfo().username.slice(0, 128);
  } catch {
    return "unknown";
  }
}

const when = (ms: number) => new Date(ms).toISOString().replace("T", " ").slice(0, 19);

/** `geode policy ls [--json]`: the stored sets with their mode, digest, policies and last change. */
export const policyLsCommand: CommandModule = {
  async run(args, io) {
    const { values } = parseArgs({ args, options: { json: { type: "boolean", default: false } } });
    const sets = await withPolicies(io, (store) =>
      store.list((key) => io.err(`skipping malformed policy set ${key}\n`)),
    );
    if (values.json) {
      io.out(`${JSON.stringify(sets.map(({ text: _text, ...rest }) => rest))}\n`);
      return 0;
    }
    if (sets.length === 0) {
      io.out("no policy sets (add one with 'geode policy add --pack destructive-shell')\n");
      return 0;
    }
    io.out(
      renderTable(
        ["name", "mode", "sha256", "changed", "by"],
        sets.map((s) => [s.name, s.mode, s.sha256.slice(0, 12), when(s.created_at), s.updated_by]),
      ),
    );
    return 0;
  },
};

/** `geode policy show NAME`: a stored set's text, after a comment line with its mode and digest. */
export const policyShowCommand: CommandModule = {
  async run(args, io) {
    const { positionals } = parseArgs({ args, allowPositionals: true, options: {} });
    if (positionals.length !== 1) throw new UsageError("give one policy set name");
    const name = setName(positionals[0]);
    const record = await withPolicies(io, (store) => store.get(name));
    if (!record) {
      io.err(`no policy set ${name}\n`);
      return 1;
    }
    io.out(
      `// ${record.name}: ${record.mode}, sha256 ${record.sha256}, ${when(record.created_at)} by ${record.updated_by}\n`,
    );
    io.out(record.text.endsWith("\n") ? record.text : `${record.text}\n`);
    return 0;
  },
};

/** `geode policy rm NAME`. */
export const policyRmCommand: CommandModule = {
  async run(args, io) {
    const { positionals } = parseArgs({ args, allowPositionals: true, options: {} });
    if (positionals.length !== 1) throw new UsageError("give one policy set name");
    const name = setName(positionals[0]);
    if (!(await withPolicies(io, (store) => store.remove(name)))) {
      io.err(`no policy set ${name}\n`);
      return 1;
    }
    io.out(`removed policy set ${name}\n`);
    return 0;
  },
};

/** `geode policy packs`: the shipped packs and what each is for. */
export const policyPacksCommand: CommandModule = {
  async run(args, io) {
    parseArgs({ args, options: {} });
    schemaText();
    io.out(
      renderTable(
        ["pack", "what it does"],
        packNames().map((p) => [p, packSummary(packText(p) ?? "")]),
      ),
    );
    return 0;
  },
};
