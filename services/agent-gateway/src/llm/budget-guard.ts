import type { Logger } from "@geode/bus";
import { type BudgetRecord, budgetSpendKey, parseBudgetKey, windowEnd, windowStart } from "@geode/contracts";
import type { BudgetSpendStore, BudgetStore, RecordWatch } from "@geode/state";

/** Who a call is charged to: the agent, its groups, the session. */
export interface Payer {
  agent: string;
  groups: readonly string[];
  session_id: string;
}

/** One budget a call was refused by, or one that a call took past its soft line. */
export interface BudgetFinding {
  budget: string;
  window: BudgetRecord["window"];
  reason: "limit_usd" | "limit_tokens" | "requests_per_minute" | "soft_percent";
  used_usd: number;
  used_tokens: number;
  limit_usd?: number | undefined;
  limit_tokens?: number | undefined;
  requests_per_minute?: number | undefined;
  soft_percent?: number | undefined;
  /** Seconds until the budget lets a call through again (refusals). */
  retry_after_s?: number | undefined;
}

const SESSION_RETRY_AFTER_S = 86_400;
const MINUTE_MS = 60_000;

/**
 * The budgets of DESIGN section 21 as the gateway applies them: follows KV `{ns}_budgets`, refuses
 * a call that would start with any applicable budget spent (the strictest wins) or past its
 * requests per minute, and adds each ended call once to every applicable budget's window counter
 * (KV `{ns}_llm_spend`), telling which crossed their soft line.
 */
export class BudgetGuard {
  private readonly budgets = new Map<string, BudgetRecord>();
  /** Start times of recent calls per budget with a request rate (this replica's). */
  private readonly recent = new Map<string, number[]>();
  private watch: RecordWatch | undefined;

  private constructor(
    private readonly spend: BudgetSpendStore,
    private readonly log: Logger,
  ) {}

  static async start(store: BudgetStore, spend: BudgetSpendStore, log: Logger): Promise<BudgetGuard> {
    const guard = new BudgetGuard(spend, log);
    guard.watch = await store.watch(({ key, value, malformed }) => {
      if (malformed) log.warn({ key }, "skipping malformed budget");
      if (value && !("error" in parseBudgetKey(key))) guard.budgets.set(key, value);
      else guard.budgets.delete(key);
    });
    return guard;
  }

  stop(): void {
    void this.watch?.stop();
  }

  private applicable(payer: Payer): Array<[string, BudgetRecord]> {
    const keys = [
      `agent.${payer.agent}`,
      ...payer.groups.map((g) => `group.${g}`),
      ...(payer.session_id === "" ? [] : [`session.${payer.session_id}`]),
    ];
    return keys.flatMap((k) => {
      const b = this.budgets.get(k);
      return b ? [[k, b] as [string, BudgetRecord]] : [];
    });
  }

  /** The refusals of a call about to start (empty: it may start); counts it against request rates. */
  async admit(payer: Payer, now = Date.now()): Promise<BudgetFinding[]> {
    const budgets = this.applicable(payer);
    if (budgets.length === 0) return [];
    const refusals: BudgetFinding[] = [];
    await Promise.all(
      budgets.map(async ([key, b]) => {
        if (b.limit_usd === undefined && b.limit_tokens === undefined) return;
        const start = windowStart(b.window, now);
        const used = await this.spend.get(budgetSpendKey(key, b.window, start), start);
        const over: BudgetFinding["reason"] | null =
          b.limit_usd !== undefined && used.usd >= b.limit_usd
            ? "limit_usd"
            : b.limit_tokens !== undefined && used.tokens >= b.limit_tokens
              ? "limit_tokens"
              : null;
        if (over === null) return;
        const end = windowEnd(b.window, start);
        refusals.push({
          budget: key,
          window: b.window,
          reason: over,
          used_usd: used.usd,
          used_tokens: used.tokens,
          limit_usd: b.limit_usd,
          limit_tokens: b.limit_tokens,
          retry_after_s:
            end === undefined ? SESSION_RETRY_AFTER_S : Math.max(1, Math.ceil((end - now) / 1000)),
        });
      }),
    );
    for (const [key, b] of budgets) {
      if (b.requests_per_minute === undefined) continue;
      const times = (this.recent.get(key) ?? []).filter((t) => now - t < MINUTE_MS);
      this.recent.set(key, times);
      if (times.length >= b.requests_per_minute) {
        refusals.push({
          budget: key,
          window: b.window,
          reason: "requests_per_minute",
          used_usd: 0,
          used_tokens: 0,
          requests_per_minute: b.requests_per_minute,
          retry_after_s: Math.max(1, Math.ceil((MINUTE_MS - (now - (times[0] ?? now))) / 1000)),
        });
      }
    }
    if (refusals.length === 0)
      for (const [key, b] of budgets)
        if (b.requests_per_minute !== undefined) this.recent.get(key)?.push(now);
    return refusals;
  }

  /**
   * Adds an ended call to every applicable budget's window (once); returns the budgets it took
   * past their soft line. A counter that cannot be written is logged: the call already happened.
   */
  async charge(
    payer: Payer,
    call: { usd: number; tokens: number },
    now = Date.now(),
  ): Promise<BudgetFinding[]> {
    const crossed: BudgetFinding[] = [];
    await Promise.all(
      this.applicable(payer).map(async ([key, b]) => {
        if (b.limit_usd === undefined && b.limit_tokens === undefined) return;
        const start = windowStart(b.window, now);
        try {
          const { before, after } = await this.spend.add(budgetSpendKey(key, b.window, start), start, call);
          const soft = b.soft_percent / 100;
          const past = (used: { usd: number; tokens: number }) =>
            (b.limit_usd !== undefined && used.usd >= b.limit_usd * soft) ||
            (b.limit_tokens !== undefined && used.tokens >= b.limit_tokens * soft);
          if (!past(before) && past(after))
            crossed.push({
              budget: key,
              window: b.window,
              reason: "soft_percent",
              used_usd: after.usd,
              used_tokens: after.tokens,
              limit_usd: b.limit_usd,
              limit_tokens: b.limit_tokens,
              soft_percent: b.soft_percent,
            });
        } catch (err) {
          this.log.error(
            { err_type: (err as Error).name, budget: key },
            "could not count a call against its budget",
          );
        }
      }),
    );
    return crossed;
  }
}
