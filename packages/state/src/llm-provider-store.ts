import type { GeodeConnection } from "@geode/bus";
import { LLM_PROVIDER_NAME_PATTERN, type LlmProviderRecord, LlmProviderRecordSchema } from "@geode/contracts";
import { KvRecords, type RecordChange, type RecordWatch, type StoreOptions } from "./kv-records.js";
import { isLive } from "./mutate-kv-record.js";

/**
 * Model provider records, KV `{ns}_llm_providers`, key = provider name (DESIGN section 21).
 * `geode llm add` writes them; the agent-gateway only reads. A record names the variable that
 * holds the provider key, never the key.
 */
export class LlmProviderStore {
  private constructor(private readonly records: KvRecords<LlmProviderRecord>) {}

  static async open(conn: GeodeConnection, options: StoreOptions = {}): Promise<LlmProviderStore> {
    return new LlmProviderStore(
      await KvRecords.open(conn, "llmProviders", (raw) => LlmProviderRecordSchema.parse(raw), options),
    );
  }

  /** Writes (or replaces) a record; a bad one is refused (throws). */
  async put(record: LlmProviderRecord): Promise<void> {
    const checked = LlmProviderRecordSchema.parse(record);
    await this.records.put(checked.name, checked);
  }

  /** The record of `name`, or null (absent, or not a valid record). */
  async get(name: string): Promise<LlmProviderRecord | null> {
    if (!LLM_PROVIDER_NAME_PATTERN.test(name)) return null;
    return (await this.records.read(name).catch(() => null))?.value ?? null;
  }

  /** Every record, by name; `onMalformed` hears of keys holding something else. */
  async list(onMalformed?: (key: string) => void): Promise<LlmProviderRecord[]> {
    return (await this.records.list(">", onMalformed))
      .map((r) => r.value)
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /** Removes a record (a malformed one too); false when the key holds nothing. */
  async remove(name: string): Promise<boolean> {
    if (!LLM_PROVIDER_NAME_PATTERN.test(name)) return false;
    if (!isLive(await this.records.kv.get(name))) return false;
    await this.records.delete(name);
    return true;
  }

  /** Follows the records: every current one, then each change (null = removed or malformed). */
  watch(
    apply: (change: RecordChange<LlmProviderRecord>) => void,
    onError?: (err: unknown) => void,
  ): Promise<RecordWatch> {
    return this.records.watch(apply, { onError, keyOf: (r) => r.name });
  }
}
