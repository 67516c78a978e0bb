import { z } from "zod";
import { AgentGroupSchema, AgentNameSchema } from "./agent-record.js";
import { matchesToolGlob } from "./tool-glob.js";

/* The LLM gateway's shared shapes (DESIGN section 21): provider records in KV
 * `{ns}_llm_providers`, prices in `{ns}_llm_prices`, budgets in `{ns}_budgets`, the spend counters
 * the gateway keeps per budget and window, and the payloads of the model-call events. */

/** Provider names (KV `{ns}_llm_providers` keys; the `{provider}` of `/v1/llm/{provider}/…`). */
export const LLM_PROVIDER_NAME_PATTERN = /^[a-z][a-z0-9-]{0,31}$/;
const ENV_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
/** Model globs: `*` any run of characters, `?` one. */
const MODEL_GLOB = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[A-Za-z0-9_.:/@*?-]+$/, "model globs use [A-Za-z0-9_.:/@-] and * ?");

export const LlmProviderNameSchema = z
  .string()
  .regex(LLM_PROVIDER_NAME_PATTERN, "provider names match [a-z][a-z0-9-]{0,31}");

/** The provider APIs the gateway speaks: OpenAI (Responses, Chat Completions), Anthropic Messages, Gemini. */
export const LlmProviderKindSchema = z.enum(["openai", "anthropic", "gemini"]);
export type LlmProviderKind = z.infer<typeof LlmProviderKindSchema>;

function isHttpUrl(url: string): boolean {
  try {
    const u = new URL(url);
    return (u.protocol === "http:" || u.protocol === "https:") && u.username === "" && u.password === "";
  } catch {
    return false;
  }
}

/**
 * One model provider, as `geode llm add` writes it. The provider key itself is never stored:
 * `key_env` names the variable of the gateway's environment that holds it.
 */
export const LlmProviderRecordSchema = z.strictObject({
  name: LlmProviderNameSchema,
  kind: LlmProviderKindSchema,
  /** As the provider's SDKs take it (`https://api.openai.com/v1`); paths are appended to it. */
  base_url: z
    .string()
    .max(2048)
    .refine(isHttpUrl, "base_url is an http(s) URL without credentials")
    .refine((u) => !u.includes("?") && !u.includes("#"), "base_url has no query or fragment"),
  key_env: z.string().regex(ENV_NAME_PATTERN, "key_env is an environment variable name"),
  /** Globs of the models agents may call through it; absent: any. */
  models: z.array(MODEL_GLOB).min(1).max(128).optional(),
  created_at: z.number().int().optional(),
  updated_by: z.string().min(1).max(128).optional(),
});
export type LlmProviderRecord = z.infer<typeof LlmProviderRecordSchema>;

/** True when the provider lets agents call `model`. */
export function providerAllowsModel(record: LlmProviderRecord, model: string): boolean {
  return record.models === undefined || record.models.some((g) => matchesToolGlob(g, model));
}

const USD_PER_MTOK = z.number().finite().min(0).max(1_000_000);

/** Prices of the models a glob matches, USD per million tokens (KV `{ns}_llm_prices`, key = the glob encoded). */
export const LlmPriceRecordSchema = z.strictObject({
  model: MODEL_GLOB,
  input: USD_PER_MTOK,
  output: USD_PER_MTOK,
  /** Cached input tokens; absent: billed as input. */
  cached: USD_PER_MTOK.optional(),
  updated_at: z.number().int().optional(),
});
export type LlmPriceRecord = z.infer<typeof LlmPriceRecordSchema>;

/** The KV key of a price (globs hold characters keys may not): `=` + base64url of the glob. */
export const llmPriceKey = (glob: string): string => `=${Buffer.from(glob, "utf8").toString("base64url")}`;

/** Token counts of one call, as read from the provider's usage fields. */
export interface LlmUsage {
  input_tokens: number;
  cached_input_tokens: number;
  output_tokens: number;
}

/**
 * The price of the most specific glob matching `model` (the longest pattern without wildcards
 * counted first), or undefined.
 */
export function priceFor(prices: readonly LlmPriceRecord[], model: string): LlmPriceRecord | undefined {
  const specificity = (g: string) => g.replace(/[*?]/g, "").length;
  return prices
    .filter((p) => matchesToolGlob(p.model, model))
    .sort((a, b) => specificity(b.model) - specificity(a.model) || (a.model < b.model ? -1 : 1))[0];
}

/** A call's cost in USD: `input_tokens` includes the cached ones (as OpenAI and Gemini count them). */
export function costOf(price: LlmPriceRecord | undefined, usage: LlmUsage): number {
  if (!price) return 0;
  const cached = Math.min(usage.cached_input_tokens, usage.input_tokens);
  const usd =
    ((usage.input_tokens - cached) * price.input +
      cached * (price.cached ?? price.input) +
      usage.output_tokens * price.output) /
    1_000_000;
  return Math.round(usd * 1e9) / 1e9;
}

/* Budgets: KV `{ns}_budgets`, key = `{scope}.{name}`. */

export const BudgetScopeSchema = z.enum(["agent", "group", "session"]);
export type BudgetScope = z.infer<typeof BudgetScopeSchema>;
export const BudgetWindowSchema = z.enum(["1h", "1d", "30d", "session"]);
export type BudgetWindow = z.infer<typeof BudgetWindowSchema>;

/** Session ids in budget keys: one KV token. */
const SESSION_BUDGET_NAME = /^[A-Za-z0-9_-]{1,200}$/;

/** The scope and name of a budget key, or why not. */
export function parseBudgetKey(key: string): { scope: BudgetScope; name: string } | { error: string } {
  const cut = key.indexOf(".");
  const scope = BudgetScopeSchema.safeParse(cut < 0 ? key : key.slice(0, cut));
  if (!scope.success || cut < 0)
    return { error: "a budget is named SCOPE.NAME, scope agent, group or session" };
  const name = key.slice(cut + 1);
  const ok =
    scope.data === "agent"
      ? AgentNameSchema.safeParse(name).success
      : scope.data === "group"
        ? AgentGroupSchema.safeParse(name).success
        : SESSION_BUDGET_NAME.test(name);
  if (!ok) return { error: `${JSON.stringify(name)} is not a valid ${scope.data} name` };
  return { scope: scope.data, name };
}

export const BudgetRecordSchema = z
  .strictObject({
    limit_usd: z.number().finite().positive().max(1e9).optional(),
    limit_tokens: z.number().int().positive().max(1e15).optional(),
    window: BudgetWindowSchema,
    soft_percent: z.number().finite().min(1).max(100).default(80),
    requests_per_minute: z.number().int().positive().max(1_000_000).optional(),
    updated_at: z.number().int().optional(),
    updated_by: z.string().min(1).max(128).optional(),
  })
  .refine(
    (b) => b.limit_usd !== undefined || b.limit_tokens !== undefined || b.requests_per_minute !== undefined,
    "a budget sets limit_usd, limit_tokens or requests_per_minute",
  );
export type BudgetRecord = z.infer<typeof BudgetRecordSchema>;

/** What one budget window has used (the gateway's counter, updated once per call). */
export const BudgetSpendSchema = z.strictObject({
  usd: z.number().finite().min(0),
  tokens: z.number().int().min(0),
  calls: z.number().int().min(0),
  /** Epoch ms the window began (0 for a session window). */
  window_start: z.number().int().min(0),
});
export type BudgetSpend = z.infer<typeof BudgetSpendSchema>;

const WINDOW_MS: Record<Exclude<BudgetWindow, "session">, number> = {
  "1h": 3_600_000,
  "1d": 86_400_000,
  "30d": 30 * 86_400_000,
};

/** The start of the window `at` falls in (fixed windows aligned to the epoch; 0 for `session`). */
export function windowStart(window: BudgetWindow, at: number): number {
  if (window === "session") return 0;
  const ms = WINDOW_MS[window];
  return at - (at % ms);
}

/** When the window that began at `start` ends (undefined for `session`). */
export function windowEnd(window: BudgetWindow, start: number): number | undefined {
  return window === "session" ? undefined : start + WINDOW_MS[window];
}

/** The KV key of a budget's counter in `{ns}_llm_spend`: `{scope}.{name}.{window}.{window_start}`. */
export const budgetSpendKey = (budgetKey: string, window: BudgetWindow, start: number): string =>
  `${budgetKey}.${window}.${start}`;

/* Event payloads (no prompt or completion text). */

/** `llm_call_ended`. */
export interface LlmCallEndedPayload extends LlmUsage {
  /** The agent whose token made the call (every model-call event names it). */
  agent: string;
  provider: string;
  model: string;
  cost_usd: number;
  duration_ms: number;
  /** The provider's HTTP status. */
  status: number;
  stream: boolean;
}
