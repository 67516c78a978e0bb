import type { GeodeConnection } from "@geode/bus";
import { type BudgetSpend, BudgetSpendSchema } from "@geode/contracts";
import { KvRecords, type StoreOptions } from "./kv-records.js";

/**
 * What each budget window has used, KV `{ns}_llm_spend`, key = `budgetSpendKey(…)`: the
 * agent-gateway adds each call once, when it ends, with a revision-checked write, so replicas
 * racing one budget never lose or double a call.
 */
export class BudgetSpendStore {
  private constructor(private readonly records: KvRecords<BudgetSpend>) {}

  static async open(conn: GeodeConnection, options: StoreOptions = {}): Promise<BudgetSpendStore> {
    return new BudgetSpendStore(
      await KvRecords.open(conn, "llmSpend", (raw) => BudgetSpendSchema.parse(raw), options),
    );
  }

  /** The window's use so far (zero when nothing was counted yet). */
  async get(key: string, windowStart: number): Promise<BudgetSpend> {
    return (
      (await this.records.get(key).catch(() => null)) ?? {
        usd: 0,
        tokens: 0,
        calls: 0,
        window_start: windowStart,
      }
    );
  }

  /** Adds one call; returns the use before and after it. */
  async add(
    key: string,
    windowStart: number,
    call: { usd: number; tokens: number },
  ): Promise<{ before: BudgetSpend; after: BudgetSpend }> {
    let before: BudgetSpend = { usd: 0, tokens: 0, calls: 0, window_start: windowStart };
    const result = await this.records.mutate(
      key,
      (current) => {
        before = current ?? before;
        return {
          usd: Math.round((before.usd + call.usd) * 1e9) / 1e9,
          tokens: before.tokens + call.tokens,
          calls: before.calls + 1,
          window_start: windowStart,
        };
      },
      { replaceMalformed: true },
    );
    return { before, after: result.value ?? before };
  }
}
