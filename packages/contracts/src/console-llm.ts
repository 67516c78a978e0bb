import { z } from "zod";
import { BudgetScopeSchema, BudgetWindowSchema } from "./llm.js";

const int = z.number().int();
const count = int.min(0);
const usd = z.number().finite().min(0);

/** One agent's, group's or session's model calls over the window, per bucket (oldest first). */
const ConsoleLlmSeriesSchema = z.strictObject({
  name: z.string(),
  /** USD per bucket. */
  usd: z.array(usd),
  /** Input plus output tokens per bucket. */
  tokens: z.array(count),
  /** Calls per bucket (ended and failed). */
  calls: z.array(count),
  total_usd: usd,
  total_tokens: count,
  total_calls: count,
});
export type ConsoleLlmSeries = z.infer<typeof ConsoleLlmSeriesSchema>;

/** One budget of KV `{ns}_budgets` with what its current window has used (KV `{ns}_llm_spend`). */
const ConsoleLlmBudgetSchema = z.strictObject({
  key: z.string(),
  scope: BudgetScopeSchema,
  name: z.string(),
  window: BudgetWindowSchema,
  limit_usd: usd.nullable(),
  limit_tokens: count.nullable(),
  soft_percent: z.number(),
  requests_per_minute: count.nullable(),
  /** Epoch ms the current window began (0 for a session window). */
  window_start: count,
  /** When it ends; null for a session window. */
  window_end: count.nullable(),
  used_usd: usd,
  used_tokens: count,
  used_calls: count,
  /** The larger of the USD and token use in percent of their limits; null with neither limit. */
  percent: z.number().min(0).nullable(),
  /** `spent` at 100 % (calls are refused), `warning` past `soft_percent`, else `ok`. */
  state: z.enum(["ok", "warning", "spent"]),
});
export type ConsoleLlmBudget = z.infer<typeof ConsoleLlmBudgetSchema>;

/** A call a budget refused (`cost_limit_exceeded`), newest first. */
const ConsoleLlmRefusalSchema = z.strictObject({
  ts: int,
  session_id: z.string(),
  /** The agent of the session; null when the projection does not know it. */
  agent: z.string().nullable(),
  provider: z.string().nullable(),
  model: z.string().nullable(),
  budget: z.string().nullable(),
  window: z.string().nullable(),
  /** `limit_usd`, `limit_tokens` or `requests_per_minute`. */
  reason: z.string().nullable(),
  used_usd: usd.nullable(),
  used_tokens: count.nullable(),
  limit_usd: usd.nullable(),
  limit_tokens: count.nullable(),
  retry_after_s: count.nullable(),
});
export type ConsoleLlmRefusal = z.infer<typeof ConsoleLlmRefusalSchema>;

/**
 * `GET /api/llm`: model-call spend over the last 24 hours in hourly buckets per agent, group and
 * session (from the `llm_call_ended` / `llm_call_failed` events of the projection), the budgets
 * with their use, and the refused calls. Never prompt or completion text.
 */
export const ConsoleLlmSchema = z.strictObject({
  window_ms: count,
  bucket_ms: count,
  /** Each bucket's start, epoch ms, oldest first; the last holds now. */
  buckets: z.array(count),
  totals: z.strictObject({
    usd,
    tokens: count,
    calls: count,
    /** Calls that ended in `llm_call_failed`. */
    failed: count,
    /** Calls a budget refused (`cost_limit_exceeded`). */
    refused: count,
  }),
  /** By total USD, then tokens, highest first; a group sums its agents' calls. */
  agents: z.array(ConsoleLlmSeriesSchema),
  groups: z.array(ConsoleLlmSeriesSchema),
  /** The sessions with the most spend (at most 20). */
  sessions: z.array(ConsoleLlmSeriesSchema),
  budgets: z.array(ConsoleLlmBudgetSchema),
  /** The latest refusals over the window (at most 100). */
  refused: z.array(ConsoleLlmRefusalSchema),
});
export type ConsoleLlm = z.infer<typeof ConsoleLlmSchema>;
