import type { GeodeConnection } from "@geode/bus";
import { type HookName, type Names, type WebhookRecord, WebhookRecordSchema } from "@geode/contracts";
import { KvRecords, type RecordChange, type RecordWatch } from "./kv-records.js";

/**
 * Webhook handlers, KV `{ns}_webhooks`, key `{HookName}.{handler}`: the endpoint, its signing
 * secret and the registration it stands for. Owners: operators write (`geode handlers add --url`,
 * `geode handlers rm`); the hook-dispatcher only reads, and serves each one.
 */
export class WebhookStore {
  private constructor(
    private readonly records: KvRecords<WebhookRecord>,
    private readonly names: Names,
  ) {}

  static async open(conn: GeodeConnection): Promise<WebhookStore> {
    const records = await KvRecords.open(conn, "webhooks", (raw) => WebhookRecordSchema.parse(raw));
    return new WebhookStore(records, conn.names);
  }

  /** Adds a webhook; false when `{hook}.{name}` already holds one (remove it first). */
  async add(record: WebhookRecord): Promise<boolean> {
    const parsed = WebhookRecordSchema.parse(record);
    return (await this.records.create(this.names.handlerKey(parsed.hook, parsed.name), parsed)) !== null;
  }

  async get(hook: HookName, name: string): Promise<WebhookRecord | null> {
    return this.records.get(this.names.handlerKey(hook, name)).catch(() => null);
  }

  /** Removes a webhook, its history included (no old secret stays behind); false when there was none. */
  async remove(hook: HookName, name: string): Promise<boolean> {
    const key = this.names.handlerKey(hook, name);
    const entry = await this.records.kv.get(key).catch(() => null);
    if (entry?.operation !== "PUT") return false;
    await this.records.purge(key);
    return true;
  }

  /** Every webhook; `onMalformed` hears of keys holding something else. */
  async list(onMalformed?: (key: string) => void): Promise<WebhookRecord[]> {
    return (await this.records.list(">", onMalformed)).map((r) => r.value);
  }

  /** Follows the webhooks (see `KvRecords.watch`); one stored under another key counts as malformed. */
  watch(
    apply: (change: RecordChange<WebhookRecord>) => void,
    onError?: (err: unknown) => void,
  ): Promise<RecordWatch> {
    return this.records.watch(apply, { onError, keyOf: (r) => this.names.handlerKey(r.hook, r.name) });
  }
}
