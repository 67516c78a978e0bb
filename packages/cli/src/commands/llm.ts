import { parseArgs } from "node:util";
import { connectBus, type GeodeConnection } from "@geode/bus";
import {
  names as buildNames,
  LlmPriceRecordSchema,
  LlmProviderNameSchema,
  type LlmProviderRecord,
  LlmProviderRecordSchema,
} from "@geode/contracts";
import { loadConfig } from "@geode/service";
import { LlmPriceStore, LlmProviderStore } from "@geode/state";
import { type CommandIO, type CommandModule, UsageError } from "../command.js";
import { operatorName } from "../operator-name.js";
import { renderTable } from "../render-table.js";

async function withPlane<T>(io: CommandIO, body: (conn: GeodeConnection) => Promise<T>): Promise<T> {
  const config = loadConfig(io.env);
  const nc = await connectBus(config, "geode-llm");
  try {
    return await body({ nc, names: buildNames(config.namespace) });
  } finally {
    await nc.close();
  }
}

function providerName(value: string | undefined): string {
  if (value === undefined) throw new UsageError("give a provider name");
  if (!LlmProviderNameSchema.safeParse(value).success)
    throw new UsageError(`provider names match [a-z][a-z0-9-]{0,31}, got ${JSON.stringify(value)}`);
  return value;
}

/** Why a record is refused: one line per problem, each naming its field (never the value). */
function refusal(what: string, error: { issues: Array<{ path: PropertyKey[]; message: string }> }): string {
  const lines = error.issues.map((i) => `  ${i.path.map(String).join(".") || "record"}: ${i.message}`);
  return `the ${what} is refused, nothing written:\n${lines.join("\n")}`;
}

/** A value that looks like a provider key rather than a variable name. */
const looksLikeKey = (v: string) => /^(sk-|sk_|AIza|xai-|gsk_)/.test(v) || v.length > 64;

/**
 * `geode llm add NAME --kind openai|anthropic|gemini --url URL --key-env VAR [--model GLOB]…`:
 * writes the provider record to KV `{ns}_llm_providers` (replacing one of the same name). The key
 * stays in the gateway's environment under VAR; only the variable's name is stored.
 */
export const llmAddCommand: CommandModule = {
  async run(args, io) {
    const { positionals, values } = parseArgs({
      args,
      allowPositionals: true,
      options: {
        kind: { type: "string" },
        url: { type: "string" },
        "key-env": { type: "string" },
        model: { type: "string", multiple: true },
      },
    });
    if (positionals.length > 1) throw new UsageError("give one provider name");
    const name = providerName(positionals[0]);
    const keyEnv = values["key-env"];
    if (keyEnv !== undefined && looksLikeKey(keyEnv))
      throw new UsageError(
        "--key-env names the variable of the gateway's environment that holds the key (e.g. OPENAI_API_KEY), not the key itself: nothing written",
      );
    const candidate = {
      name,
      kind: values.kind,
      base_url: values.url?.replace(/\/+$/, ""),
      key_env: keyEnv,
      ...(values.model ? { models: values.model } : {}),
      created_at: Date.now(),
      updated_by: operatorName(io),
    };
    const parsed = LlmProviderRecordSchema.safeParse(candidate);
    if (!parsed.success) throw new UsageError(refusal("provider record", parsed.error));
    const record = parsed.data;
    const replaced = await withPlane(io, async (conn) => {
      const store = await LlmProviderStore.open(conn);
      const before = await store.get(name);
      await store.put(record);
      return before !== null;
    });
    io.out(
      `LLM provider ${name} ${replaced ? "replaced" : "added"} (${record.kind}, ${record.base_url}, key from $${record.key_env}); agents use base URL <gateway>/v1/llm/${name}\n`,
    );
    return 0;
  },
};

/** `geode llm ls [--json]`: the providers, then the prices. */
export const llmLsCommand: CommandModule = {
  async run(args, io) {
    const { values } = parseArgs({ args, options: { json: { type: "boolean", default: false } } });
    const { providers, prices } = await withPlane(io, async (conn) => {
      const skip = (key: string) => io.err(`skipping malformed record ${key}\n`);
      const [providers, prices] = await Promise.all([
        (await LlmProviderStore.open(conn)).list(skip),
        (await LlmPriceStore.open(conn)).list(skip),
      ]);
      return { providers, prices };
    });
    if (values.json) {
      io.out(`${JSON.stringify({ providers, prices })}\n`);
      return 0;
    }
    if (providers.length === 0)
      io.out("no LLM providers (add one with 'geode llm add NAME --kind K --url URL --key-env VAR')\n");
    else
      io.out(
        renderTable(
          ["name", "kind", "base url", "key from", "models"],
          providers.map((p: LlmProviderRecord) => [
            p.name,
            p.kind,
            p.base_url,
            `$${p.key_env}`,
            p.models?.join(", ") ?? "any",
          ]),
        ),
      );
    if (prices.length > 0)
      io.out(
        renderTable(
          ["model", "input $/Mtok", "cached $/Mtok", "output $/Mtok"],
          prices.map((p) => [p.model, String(p.input), String(p.cached ?? p.input), String(p.output)]),
        ),
      );
    return 0;
  },
};

/** `geode llm rm NAME`: deletes the provider; its endpoint answers 404 at once. */
export const llmRmCommand: CommandModule = {
  async run(args, io) {
    const { positionals } = parseArgs({ args, allowPositionals: true, options: {} });
    if (positionals.length > 1) throw new UsageError("give one provider name");
    const name = providerName(positionals[0]);
    const removed = await withPlane(io, async (conn) => (await LlmProviderStore.open(conn)).remove(name));
    if (!removed) {
      io.err(`no LLM provider ${name} (see 'geode llm ls')\n`);
      return 1;
    }
    io.out(`removed LLM provider ${name}\n`);
    return 0;
  },
};

function usd(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (value.trim() === "" || !Number.isFinite(n) || n < 0)
    throw new UsageError(`--${flag} is USD per million tokens, a number ≥ 0, got ${JSON.stringify(value)}`);
  return n;
}

/**
 * `geode llm price MODEL --input X --output Y [--cached Z]` (USD per million tokens; MODEL may be
 * a glob) or `geode llm price MODEL --rm`: KV `{ns}_llm_prices`.
 */
export const llmPriceCommand: CommandModule = {
  async run(args, io) {
    const { positionals, values } = parseArgs({
      args,
      allowPositionals: true,
      options: {
        input: { type: "string" },
        output: { type: "string" },
        cached: { type: "string" },
        rm: { type: "boolean", default: false },
      },
    });
    if (positionals.length !== 1) throw new UsageError("give one model (or model glob)");
    const model = positionals[0] as string;
    if (values.rm) {
      const removed = await withPlane(io, async (conn) => (await LlmPriceStore.open(conn)).remove(model));
      if (!removed) {
        io.err(`no price for ${model}\n`);
        return 1;
      }
      io.out(`removed the price of ${model}\n`);
      return 0;
    }
    const input = usd(values.input, "input");
    const output = usd(values.output, "output");
    if (input === undefined || output === undefined) throw new UsageError("give --input and --output");
    const cached = usd(values.cached, "cached");
    const parsed = LlmPriceRecordSchema.safeParse({
      model,
      input,
      output,
      ...(cached === undefined ? {} : { cached }),
      updated_at: Date.now(),
    });
    if (!parsed.success) throw new UsageError(refusal("price", parsed.error));
    await withPlane(io, async (conn) => (await LlmPriceStore.open(conn)).put(parsed.data));
    io.out(
      `price of ${model}: $${input} input, $${cached ?? input} cached input, $${output} output per million tokens\n`,
    );
    return 0;
  },
};
