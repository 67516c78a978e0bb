import { existsSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { connectBus } from "@geode/bus";
import {
  names as buildNames,
  type LlmProviderKind,
  LlmProviderNameSchema,
  type LlmProviderRecord,
} from "@geode/contracts";
import { loadConfig } from "@geode/service";
import { LlmProviderStore } from "@geode/state";
import { parse } from "smol-toml";
import { type CommandIO, UsageError } from "../command.js";
import { hookEndpoint } from "../commands/hook-shim.js";
import { writeAtomically, writeMergedJson } from "./config-file.js";
import { TOKEN_ENV } from "./hook-command.js";

/** The agents `geode connect <agent> --llm` configures. */
export type LlmAgent = "claude-code" | "codex" | "gemini-cli" | "copilot" | "qwen-code" | "opencode";

/** What one agent is told: its settings file's new text, or shell lines that set its variables. */
interface LlmTarget {
  label: string;
  /** The provider kinds the agent can speak. */
  kinds: readonly LlmProviderKind[];
  /** Where it is written without `--write`; undefined: printed (the agent reads only its environment). */
  defaultFile?(env: NodeJS.ProcessEnv): string;
  /** The configuration for `baseUrl` (`…/v1/llm/{provider}`), merged into `current`. */
  render(current: string, baseUrl: string, provider: LlmProviderRecord): string;
  /**
   * A JSON settings file the agent also needs changed beside the variables it is printed (merged
   * in unless `--print`).
   */
  settings?: { file(env: NodeJS.ProcessEnv): string; merge(current: Record<string, unknown>): unknown };
}

const home = (env: NodeJS.ProcessEnv) => env["HOME"] || os.homedir();
const CODEX_BEGIN =
  "# >>> geode connect codex --llm: model calls through the agent gateway (rewritten by geode)";
const CODEX_END = "# <<< geode connect codex --llm";
const CODEX_TOP = "# geode connect codex --llm: the provider of the block below";

/** Shell lines setting `vars` (the token by reference to its variable, never its value). */
function exports(vars: Record<string, string>): string {
  return `${Object.entries(vars)
    .map(([k, v]) => `export ${k}=${v.startsWith("$") ? `"${v}"` : `'${v}'`}`)
    .join("\n")}\n`;
}

function jsonObject(current: string): Record<string, unknown> {
  const parsed = current.trim() === "" ? {} : (JSON.parse(current) as unknown);
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed))
    throw new Error("does not hold a JSON object");
  return parsed as Record<string, unknown>;
}

const objectAt = (o: Record<string, unknown>, key: string): Record<string, unknown> => {
  const v = o[key] ?? {};
  if (v === null || typeof v !== "object" || Array.isArray(v)) throw new Error(`its ${key} is not an object`);
  return v as Record<string, unknown>;
};

/** Codex's retry settings of a provider table (`ModelProviderInfo` of the pinned Codex). */
const CODEX_RETRIES = ["request_max_retries", "stream_max_retries"] as const;
type CodexRetries = Partial<Record<(typeof CODEX_RETRIES)[number], number>>;

/** The retry settings a block written before holds (a person may have raised them), by key. */
function codexRetries(block: string, id: string): CodexRetries {
  let table: unknown;
  try {
    table = (parse(block) as { model_providers?: Record<string, unknown> }).model_providers?.[id];
  } catch {
    return {};
  }
  const out: CodexRetries = {};
  for (const k of CODEX_RETRIES) {
    const v = (table as Record<string, unknown> | undefined)?.[k];
    if (typeof v === "number" && Number.isInteger(v) && v >= 0 && v <= 100) out[k] = v;
  }
  return out;
}

/** Codex's `config.toml`: `model_provider` at the top, the provider's table in a block at the end. */
function codexConfig(current: string, baseUrl: string, p: LlmProviderRecord): string {
  const id = `geode-${p.name}`;
  const lines = current.split("\n");
  const firstTable = lines.findIndex((l) => /^\s*\[/.test(l));
  const top = (firstTable < 0 ? lines : lines.slice(0, firstTable)).filter(
    (l) => !/^\s*model_provider\s*=/.test(l) && l !== CODEX_TOP,
  );
  const tables = firstTable < 0 ? [] : lines.slice(firstTable);
  let rest = [...top, ...tables].join("\n");
  const b = rest.indexOf(CODEX_BEGIN);
  let retries: CodexRetries = {};
  if (b >= 0) {
    const e = rest.indexOf(CODEX_END, b);
    retries = codexRetries(rest.slice(b, e < 0 ? undefined : e), id);
    rest = `${rest.slice(0, b)}${e < 0 ? "" : rest.slice(e + CODEX_END.length)}`;
  }
  rest = rest.replace(/^\n+/, "").replace(/\n*$/, "");
  const block = [
    CODEX_BEGIN,
    `[model_providers.${id}]`,
    `name = ${JSON.stringify(`geode (${p.name})`)}`,
    `base_url = ${JSON.stringify(baseUrl)}`,
    `env_key = ${JSON.stringify(TOKEN_ENV)}`,
    'wire_api = "responses"',
    // A 429 of the gateway means a spent budget (Retry-After: the window's end) or the rate of
    // its budget: Codex would wait Retry-After and send the call again, so the turn ends at once.
    ...CODEX_RETRIES.map((k) => `${k} = ${retries[k] ?? 0}`),
    CODEX_END,
  ].join("\n");
  const text = `${CODEX_TOP}\nmodel_provider = ${JSON.stringify(id)}\n${rest === "" ? "" : `${rest}\n`}\n${block}\n`;
  parse(text);
  return text;
}

/** The provider record's model ids that are not globs: the models an agent is told it may ask for. */
const literalModels = (p: LlmProviderRecord): string[] => (p.models ?? []).filter((m) => !/[*?[\]]/.test(m));

/** Each agent's base-URL setting (DESIGN section 21; shared/notes/TECH.md sections 10-12 have the facts). */
const TARGETS: Record<LlmAgent, LlmTarget> = {
  codex: {
    label: "Codex",
    kinds: ["openai"],
    defaultFile: (env) => path.join(env["CODEX_HOME"] || path.join(home(env), ".codex"), "config.toml"),
    render: codexConfig,
  },
  "claude-code": {
    label: "Claude Code",
    kinds: ["anthropic"],
    defaultFile: (env) => path.join(home(env), ".claude", "settings.json"),
    render: (current, baseUrl) => {
      const settings = jsonObject(current);
      const env = objectAt(settings, "env");
      // The key comes from the agent token's variable at run time; its value is never written.
      return JSON.stringify(
        {
          ...settings,
          env: { ...env, ANTHROPIC_BASE_URL: baseUrl },
          apiKeyHelper: `printf %s "$${TOKEN_ENV}"`,
        },
        null,
        2,
      );
    },
  },
  "gemini-cli": {
    label: "Gemini CLI",
    kinds: ["gemini"],
    render: (_c, baseUrl) => exports({ GOOGLE_GEMINI_BASE_URL: baseUrl, GEMINI_API_KEY: `$${TOKEN_ENV}` }),
    // With a base URL in its environment and no auth type in its settings, Gemini CLI picks its
    // "gateway" auth, which refuses to run headless ("Invalid auth method selected."): the key
    // auth must be chosen in its settings.
    settings: {
      file: (env) => path.join(home(env), ".gemini", "settings.json"),
      merge: (current) => {
        const security = objectAt(current, "security");
        const auth = objectAt(security, "auth");
        return { ...current, security: { ...security, auth: { ...auth, selectedType: "gemini-api-key" } } };
      },
    },
  },
  copilot: {
    label: "Copilot CLI",
    kinds: ["openai", "anthropic"],
    // In its BYOK mode Copilot CLI has no model of its own: COPILOT_MODEL (or `--model`) names one.
    render: (_c, baseUrl, p) => {
      const model = literalModels(p)[0];
      return exports({
        COPILOT_PROVIDER_BASE_URL: baseUrl,
        COPILOT_PROVIDER_TYPE: p.kind,
        COPILOT_PROVIDER_API_KEY: `$${TOKEN_ENV}`,
        ...(model === undefined ? {} : { COPILOT_MODEL: model }),
      });
    },
  },
  "qwen-code": {
    label: "Qwen Code",
    kinds: ["openai"],
    // Qwen Code takes its auth type from these only with a model too (OPENAI_MODEL).
    render: (_c, baseUrl, p) => {
      const model = literalModels(p)[0];
      return exports({
        OPENAI_BASE_URL: baseUrl,
        OPENAI_API_KEY: `$${TOKEN_ENV}`,
        ...(model === undefined ? {} : { OPENAI_MODEL: model }),
      });
    },
  },
  opencode: {
    label: "opencode",
    kinds: ["openai", "anthropic"],
    defaultFile: (env) => path.join(home(env), ".config", "opencode", "opencode.json"),
    render: (current, baseUrl, p) => {
      const settings = jsonObject(current);
      const providers = objectAt(settings, "provider");
      const id = `geode-${p.name}`;
      const before = objectAt(providers, id);
      return JSON.stringify(
        {
          ...settings,
          provider: {
            ...providers,
            [id]: {
              ...before,
              npm: p.kind === "anthropic" ? "@ai-sdk/anthropic" : "@ai-sdk/openai-compatible",
              name: `geode (${p.name})`,
              options: { ...objectAt(before, "options"), baseURL: baseUrl, apiKey: `{env:${TOKEN_ENV}}` },
              // opencode refuses a model its provider does not list.
              models: {
                ...Object.fromEntries(literalModels(p).map((m) => [m, { name: m }])),
                ...objectAt(before, "models"),
              },
            },
          },
        },
        null,
        2,
      );
    },
  },
};

async function providerRecord(io: CommandIO, name: string): Promise<LlmProviderRecord | null> {
  const config = loadConfig(io.env);
  const nc = await connectBus(config, "geode-connect");
  try {
    return await (await LlmProviderStore.open({ nc, names: buildNames(config.namespace) })).get(name);
  } finally {
    await nc.close();
  }
}

/**
 * `geode connect <agent> --llm PROVIDER [--url URL] [--write PATH] [--print]`: points the agent's
 * model traffic at the gateway's `/v1/llm/{provider}` with the agent token (from
 * `GEODE_AGENT_TOKEN`, never its value) as its key: a settings file for Codex, Claude Code and
 * opencode, shell lines for the agents that read only their environment.
 */
export async function connectLlm(agent: LlmAgent, args: string[], io: CommandIO): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      llm: { type: "string" },
      url: { type: "string" },
      write: { type: "string" },
      print: { type: "boolean", default: false },
    },
  });
  if (positionals.length > 0) throw new UsageError(`unexpected argument: ${positionals[0]}`);
  const name = values.llm;
  if (name === undefined || !LlmProviderNameSchema.safeParse(name).success)
    throw new UsageError("--llm names a provider of 'geode llm ls' ([a-z][a-z0-9-]{0,31})");
  let baseUrl: string;
  try {
    baseUrl = hookEndpoint(values.url, io.env, "claude-code", `/v1/llm/${name}`);
  } catch {
    throw new UsageError(`--url is not a URL: ${values.url}`);
  }
  const target = TARGETS[agent];
  const provider = await providerRecord(io, name);
  if (!provider) {
    io.err(
      `no LLM provider ${name} (add it with 'geode llm add ${name} --kind K --url URL --key-env VAR')\n`,
    );
    return 1;
  }
  if (!target.kinds.includes(provider.kind)) {
    io.err(
      `${target.label} speaks ${target.kinds.join(" or ")}, but provider ${name} is ${provider.kind}; nothing written\n`,
    );
    return 1;
  }
  const defaultFile = target.defaultFile?.(io.env);
  const settings = target.settings;
  if (settings && !values.print) {
    const file = settings.file(io.env);
    const current = existsSync(file) ? readFileSync(file, "utf8") : "";
    if (!writeMergedJson(file, io, () => settings.merge(jsonObject(current)))) return 1;
    io.err(`wrote ${target.label}'s key auth into ${file}\n`);
  }
  if (values.print || (values.write === undefined && defaultFile === undefined)) {
    io.out(target.render("", baseUrl, provider));
    if (defaultFile === undefined && !values.print)
      io.err(
        `${target.label} reads these from its environment: set them where it runs (the token stays in ${TOKEN_ENV})\n`,
      );
    return 0;
  }
  const file = path.resolve(values.write ?? (defaultFile as string));
  const current = existsSync(file) ? readFileSync(file, "utf8") : "";
  if (target.defaultFile === undefined || agent === "codex") {
    let text: string;
    try {
      text = target.render(current, baseUrl, provider);
    } catch (err) {
      io.err(`${file}: ${err instanceof Error ? err.message : err}; nothing written\n`);
      return 1;
    }
    writeAtomically(file, text);
  } else if (!writeMergedJson(file, io, () => JSON.parse(target.render(current, baseUrl, provider))))
    return 1;
  io.out(
    `wrote ${target.label}'s model provider (${baseUrl}) into ${file}; its key is the agent token from ${TOKEN_ENV}\n`,
  );
  return 0;
}
