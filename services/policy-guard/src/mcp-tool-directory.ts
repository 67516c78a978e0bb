import type { Logger } from "@geode/bus";
import {
  hasMcpToolNameForm,
  type McpToolOrigin,
  registeredMcpOrigin,
  type ToolDefinition,
} from "@geode/contracts";
import type { RecordChange, RecordWatch, ToolStore } from "@geode/state";

/**
 * Which tools are MCP tools, and with which annotations: the definitions the mcp-bridge registered
 * in KV `{ns}_tools` (DESIGN section 19), followed by a watch, never what a hook payload says. A
 * definition counts only as `registeredMcpOrigin` has it; a removed or invalid definition stops
 * counting at once. A name of the registered form the watch has not delivered is read from KV for
 * that call, as the tool-executor reads it, so a tool registered a moment ago is not let through
 * as an unknown one.
 * Names from the wire are looked up in Maps only: `constructor` or `__proto__` is just a name.
 */
export class McpToolDirectory {
  /** Every key of the bucket as the watch last delivered it: its MCP origin, or null. */
  private readonly known = new Map<string, McpToolOrigin | null>();
  private watch: RecordWatch | undefined;

  private constructor(
    private readonly store: ToolStore,
    private readonly log: Logger,
  ) {}

  /** Opens the directory once the bucket's current definitions were applied. */
  static async open(store: ToolStore, log: Logger): Promise<McpToolDirectory> {
    const directory = new McpToolDirectory(store, log);
    directory.watch = await store.watch(
      (change) => directory.apply(change),
      (err) => log.warn({ err }, "tool definitions watch ended"),
    );
    return directory;
  }

  private apply(change: RecordChange<ToolDefinition>): void {
    if (change.malformed) this.log.warn({ key: change.key }, "ignoring an invalid tool definition");
    this.known.set(change.key, (change.value && registeredMcpOrigin(change.value)) ?? null);
  }

  /** The registered MCP origin of the tool named `name`, or undefined when it is none. */
  async origin(name: string): Promise<McpToolOrigin | undefined> {
    const seen = this.known.get(name);
    if (seen !== undefined) return seen ?? undefined;
    if (!hasMcpToolNameForm(name)) return undefined;
    const definition = await this.store.get(name);
    return definition ? registeredMcpOrigin(definition) : undefined;
  }

  async stop(): Promise<void> {
    await this.watch?.stop();
  }
}
