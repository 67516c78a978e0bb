import { readFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import { connectBus } from "@geode/bus";
import {
  names as buildNames,
  type PolicyMode,
  PolicyModeSchema,
  PolicySetNameSchema,
  policyRecord,
} from "@geode/contracts";
import {
  type PolicySetInForce,
  packNames,
  packSummary,
  packText,
  policySetsInForce,
  schemaText,
} from "@geode/policy";
import { loadConfig } from "@geode/service";
import { PolicyStore } from "@geode/state";
import { type CommandIO, type CommandModule, UsageError } from "../command.js";
import { operatorName } from "../operator-name.js";
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
    const record = policyRecord(name, text, mode, operatorName(io));
    await withPolicies(io, (store) => store.put(record));
    io.out(`policy set ${name} stored (${mode}, sha256 ${record.sha256.slice(0, 12)})\n`);
    return 0;
  },
};

const when = (ms: number) => new Date(ms).toISOString().replace("T", " ").slice(0, 19);

/** What the guard enforces of the stored sets (each key's last good version; see `policySetsInForce`). */
export async function setsInForce(store: PolicyStore): Promise<PolicySetInForce[]> {
  return policySetsInForce(await store.versions(), schemaText());
}

/** Why a set's newest stored value is not the one in force. */
export function refusedLine(s: PolicySetInForce): string {
  if (!s.refused) return "in force";
  const now = s.enforced ? `revision ${s.enforced.revision} is in force` : "nothing of it is in force";
  return `its newer value (revision ${s.refused.revision}) was refused, ${now}: ${s.refused.reason}`;
}

/** A set of `ls --json`: the version in force without its text, and a refused newer value. */
function lsJson(s: PolicySetInForce) {
  if (!s.enforced) return { name: s.key, in_force: false, refused: s.refused };
  const { text: _text, ...rest } = s.enforced.record;
  return { ...rest, revision: s.enforced.revision, in_force: true, refused: s.refused };
}

/**
 * `geode policy ls [--json]`: the sets in force with their mode, digest, policies and last change
 * (what the guard enforces, not what is stored): a set whose newest value was refused is marked,
 * with why, below the table.
 */
export const policyLsCommand: CommandModule = {
  async run(args, io) {
    const { values } = parseArgs({ args, options: { json: { type: "boolean", default: false } } });
    const sets = await withPolicies(io, setsInForce);
    if (values.json) {
      io.out(`${JSON.stringify(sets.map(lsJson))}\n`);
      return 0;
    }
    if (sets.length === 0) {
      io.out("no policy sets (add one with 'geode policy add --pack destructive-shell')\n");
      return 0;
    }
    io.out(
      renderTable(
        ["name", "mode", "sha256", "changed", "by", "state"],
        sets.map(({ key, enforced: e, refused }) => {
          const state = !e ? "refused" : refused ? "in force, newer refused" : "in force";
          if (!e) return [key, "-", "-", "-", "-", state];
          const r = e.record;
          return [r.name, r.mode, r.sha256.slice(0, 12), when(r.created_at), r.updated_by, state];
        }),
      ),
    );
    for (const s of sets) if (s.refused) io.out(`${s.key}: ${refusedLine(s)}\n`);
    return 0;
  },
};

/**
 * `geode policy show NAME`: the text in force, after a comment line with its mode and digest, and
 * one saying so when a newer stored value was refused.
 */
export const policyShowCommand: CommandModule = {
  async run(args, io) {
    const { positionals } = parseArgs({ args, allowPositionals: true, options: {} });
    if (positionals.length !== 1) throw new UsageError("give one policy set name");
    const name = setName(positionals[0]);
    const set = (await withPolicies(io, setsInForce)).find((s) => s.key === name);
    if (!set) {
      io.err(`no policy set ${name}\n`);
      return 1;
    }
    if (!set.enforced) {
      io.err(`policy set ${name} is not in force: ${refusedLine(set)}\n`);
      return 1;
    }
    const { record, revision } = set.enforced;
    io.out(
      `// ${record.name}: ${record.mode}, sha256 ${record.sha256}, ${when(record.created_at)} by ${record.updated_by}, revision ${revision}, in force\n`,
    );
    if (set.refused) io.out(`// ${refusedLine(set).replace(/\n/g, " ")}\n`);
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
