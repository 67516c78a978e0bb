import type { GeodeConnection } from "@geode/bus";
import { type McpServerRecord, McpServerRecordSchema } from "@geode/contracts";
import { KvRecords, type RecordChange, type RecordWatch, type StoreOptions } from "./kv-records.js";

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

  /** Follows the records: every current one, then each change (null = removed). */
  watch(
    apply: (change: RecordChange<McpServerRecord>) => void,
    onError?: (err: unknown) => void,
  ): Promise<RecordWatch> {
    return this.records.watch(apply, { onError, keyOf: (r) => r.name });
  }
}
