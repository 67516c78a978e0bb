import type { GeodeConnection } from "@geode/bus";
import { type BudgetRecord, BudgetRecordSchema, parseBudgetKey } from "@geode/contracts";
import { KvRecords, type RecordChange, type RecordWatch, type StoreOptions } from "./kv-records.js";
import { isLive } from "./mutate-kv-record.js";

/**
 * Budgets, KV `{ns}_budgets`, key = `{scope}.{name}` (DESIGN section 21). `geode budget set`
 * writes them; the agent-gateway follows them and refuses calls past a limit.
 */
export class BudgetStore {
  private constructor(private readonly records: KvRecords<BudgetRecord>) {}

  static async open(conn: GeodeConnection, options: StoreOptions = {}): Promise<BudgetStore> {
    return new BudgetStore(
      await KvRecords.open(conn, "budgets", (raw) => BudgetRecordSchema.parse(raw), options),
    );
  }

  /** Writes (or replaces) the budget `key`; a bad key or record is refused (throws). */
  async put(key: string, record: BudgetRecord): Promise<void> {
    const parsed = parseBudgetKey(key);
    if ("error" in parsed) throw new Error(parsed.error);
    await this.records.put(key, BudgetRecordSchema.parse(record));
  }

  async get(key: string): Promise<BudgetRecord | null> {
    if ("error" in parseBudgetKey(key)) return null;
    return (await this.records.read(key).catch(() => null))?.value ?? null;
  }

  async list(onMalformed?: (key: string) => void): Promise<Array<{ key: string; budget: BudgetRecord }>> {
    return (await this.records.list(">", onMalformed))
      .map((r) => ({ key: r.key, budget: r.value }))
      .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  async remove(key: string): Promise<boolean> {
    if ("error" in parseBudgetKey(key)) return false;
    if (!isLive(await this.records.kv.get(key))) return false;
    await this.records.delete(key);
    return true;
  }

  watch(
    apply: (change: RecordChange<BudgetRecord>) => void,
    onError?: (err: unknown) => void,
  ): Promise<RecordWatch> {
    return this.records.watch(apply, { onError });
  }
}
