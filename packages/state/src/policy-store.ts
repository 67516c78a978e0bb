import type { GeodeConnection } from "@geode/bus";
import { type PolicyRecord, PolicyRecordSchema } from "@geode/contracts";
import {
  KvRecords,
  type RecordChange,
  type RecordWatch,
  type StoredVersion,
  type StoreOptions,
} from "./kv-records.js";

/**
 * Policy sets of the policy-guard, KV `{ns}_policies`, key = the set's name, value `{name, text,
 * sha256, mode, created_at, updated_by}`. Owners: operators write (`geode policy add`, `geode
 * policy rm`), after checking the text against the schema; the policy-guard only reads. The
 * bucket keeps 5 revisions per key: a value written by other means that does not check leaves the
 * last good one among them in force (`versions`), across restarts of the guard too.
 */
export class PolicyStore {
  private constructor(private readonly records: KvRecords<PolicyRecord>) {}

  static async open(conn: GeodeConnection, options: StoreOptions = {}): Promise<PolicyStore> {
    return new PolicyStore(
      await KvRecords.open(conn, "policies", (raw) => PolicyRecordSchema.parse(raw), options),
    );
  }

  /** Writes a set (a new one, or a new version of one): its text was checked by the caller. */
  async put(record: PolicyRecord): Promise<void> {
    const parsed = PolicyRecordSchema.parse(record);
    await this.records.put(parsed.name, parsed);
  }

  async get(name: string): Promise<PolicyRecord | null> {
    return this.records.get(name).catch(() => null);
  }

  /** Removes a set; false when there was none. */
  async remove(name: string): Promise<boolean> {
    const entry = await this.records.kv.get(name).catch(() => null);
    if (entry?.operation !== "PUT") return false;
    await this.records.delete(name);
    return true;
  }

  /** Every set, by name; `onMalformed` hears of keys holding something else. */
  async list(onMalformed?: (key: string) => void): Promise<PolicyRecord[]> {
    return (await this.records.list(">", onMalformed))
      .map((r) => r.value)
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /** Every stored version of every set that the bucket's history still holds, oldest first. */
  versions(): Promise<StoredVersion[]> {
    return this.records.history();
  }

  /** Follows the sets (see `KvRecords.watch`); one stored under another name counts as malformed. */
  watch(
    apply: (change: RecordChange<PolicyRecord>) => void,
    onError?: (err: unknown) => void,
  ): Promise<RecordWatch> {
    return this.records.watch(apply, { onError, keyOf: (r) => r.name });
  }
}
