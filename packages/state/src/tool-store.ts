import type { GeodeConnection } from "@geode/bus";
import { maskSecretsDeep, type ToolDefinition, ToolDefinitionSchema } from "@geode/contracts";
import { KvRecords, type RecordChange, type RecordWatch, type StoreOptions } from "./kv-records.js";

/** NATS KV key syntax; a tool name outside it cannot be a key of the bucket. */
const KV_KEY = /^[-/=\w]+(\.[-/=\w]+)*$/;

/**
 * Remote tool definitions, KV `{ns}_tools`, key = tool name. Owners: each remote tool's provider
 * writes only its own key (through `serveTool`); the tool-executor only reads.
 */
export class ToolStore {
  private constructor(private readonly records: KvRecords<ToolDefinition>) {}

  static async open(conn: GeodeConnection, options: StoreOptions = {}): Promise<ToolStore> {
    return new ToolStore(
      await KvRecords.open(
        conn,
        "tools",
        {
          parse: (raw) => ToolDefinitionSchema.parse(raw),
          // The description is free text; the input schema is kept as given (it is what calls are checked against).
          clean: (d) => ({ ...d, description: maskSecretsDeep(d.description) }),
        },
        options,
      ),
    );
  }

  /** Publishes (or replaces) a provider's own definition. */
  async publish(definition: ToolDefinition): Promise<void> {
    await this.records.put(definition.name, definition);
  }

  /** Removes a provider's own definition. */
  async remove(name: string): Promise<void> {
    await this.records.delete(name);
  }

  /** The definition of `name`, or null when there is none (or it is not a valid definition). */
  async get(name: string): Promise<ToolDefinition | null> {
    if (!KV_KEY.test(name)) return null;
    const value = await this.records.read(name).catch(() => null);
    return value?.value ?? null;
  }

  /** Every definition, by name; `onMalformed` hears of keys holding something else. */
  async list(onMalformed?: (key: string) => void): Promise<ToolDefinition[]> {
    return (await this.records.list(">", onMalformed))
      .map((r) => r.value)
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /** Follows the definitions; one stored under another tool's name counts as malformed. */
  watch(
    apply: (change: RecordChange<ToolDefinition>) => void,
    onError?: (err: unknown) => void,
  ): Promise<RecordWatch> {
    return this.records.watch(apply, { onError, keyOf: (t) => t.name });
  }
}
