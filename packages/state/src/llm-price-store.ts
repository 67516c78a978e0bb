import type { GeodeConnection } from "@geode/bus";
import { type LlmPriceRecord, LlmPriceRecordSchema, llmPriceKey } from "@geode/contracts";
import { KvRecords, type RecordChange, type RecordWatch, type StoreOptions } from "./kv-records.js";
import { isLive } from "./mutate-kv-record.js";

/**
 * Model prices, KV `{ns}_llm_prices`, one record per model glob (key = `llmPriceKey(glob)`;
 * DESIGN section 21). `geode llm price` writes them; the agent-gateway reads them to cost each call.
 */
export class LlmPriceStore {
  private constructor(private readonly records: KvRecords<LlmPriceRecord>) {}

  static async open(conn: GeodeConnection, options: StoreOptions = {}): Promise<LlmPriceStore> {
    return new LlmPriceStore(
      await KvRecords.open(conn, "llmPrices", (raw) => LlmPriceRecordSchema.parse(raw), options),
    );
  }

  /** Writes (or replaces) the price of a glob; a bad one is refused (throws). */
  async put(record: LlmPriceRecord): Promise<void> {
    const checked = LlmPriceRecordSchema.parse(record);
    await this.records.put(llmPriceKey(checked.model), checked);
  }

  async list(onMalformed?: (key: string) => void): Promise<LlmPriceRecord[]> {
    return (await this.records.list(">", onMalformed))
      .map((r) => r.value)
      .sort((a, b) => (a.model < b.model ? -1 : a.model > b.model ? 1 : 0));
  }

  /** Removes the price of a glob; false when there is none. */
  async remove(glob: string): Promise<boolean> {
    const key = llmPriceKey(glob);
    if (!isLive(await this.records.kv.get(key))) return false;
    await this.records.delete(key);
    return true;
  }

  watch(
    apply: (change: RecordChange<LlmPriceRecord>) => void,
    onError?: (err: unknown) => void,
  ): Promise<RecordWatch> {
    return this.records.watch(apply, { onError, keyOf: (r) => llmPriceKey(r.model) });
  }
}
