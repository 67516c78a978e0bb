import type { GeodeConnection } from "@geode/bus";
import { MCP_SERVER_NAME_PATTERN, type McpServerRecord, McpServerRecordSchema } from "@geode/contracts";
import { KvRecords, type RecordChange, type RecordWatch, type StoreOptions } from "./kv-records.js";
import { isLive } from "./mutate-kv-record.js";

/**
 * Upstream MCP server records, KV `{ns}_mcp_servers`, key = server name (DESIGN section 19).
 * `geode mcp add` writes them; the mcp-bridge and the agent-gateway only read. A bad record is
 * reported as malformed by `watch` and skipped.
 */
export class McpServerStore {
  private constructor(private readonly records: KvRecords<McpServerRecord>) {}

  static async open(conn: GeodeConnection, options: StoreOptions = {}): Promise<McpServerStore> {
    return new McpServerStore(
      await KvRecords.open(conn, "mcpServers", (raw) => McpServerRecordSchema.parse(raw), options),
    );
  }

  /** Writes (or replaces) a record; a bad one is refused (throws). */
  async put(record: McpServerRecord): Promise<void> {
    const checked = McpServerRecordSchema.parse(record);
    await this.records.mutate(record.name, () => checked);
  }

  /** The record of `name`, or null (absent, or not a valid record). */
  async get(name: string): Promise<McpServerRecord | null> {
    if (!MCP_SERVER_NAME_PATTERN.test(name)) return null;
    return (await this.records.read(name).catch(() => null))?.value ?? null;
  }

  /** Every record, by name; `onMalformed` hears of keys holding something else. */
  async list(onMalformed?: (key: string) => void): Promise<McpServerRecord[]> {
    return (await this.records.list(">", onMalformed))
      .map((r) => r.value)
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /** Removes a record (a malformed one too); false when the key holds nothing. */
  async remove(name: string): Promise<boolean> {
    if (!MCP_SERVER_NAME_PATTERN.test(name)) return false;
    if (!isLive(await this.records.kv.get(name))) return false;
    await this.records.delete(name);
    return true;
  }

  /** Follows the records: every current one, then each change (null = removed). */
  watch(
    apply: (change: RecordChange<McpServerRecord>) => void,
    onError?: (err: unknown) => void,
  ): Promise<RecordWatch> {
    return this.records.watch(apply, { onError, keyOf: (r) => r.name });
  }
}
