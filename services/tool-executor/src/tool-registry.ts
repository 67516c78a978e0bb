import type { Logger } from "@geode/bus";
import type { ToolDefinition } from "@geode/contracts";
import type { RecordWatch, ToolStore } from "@geode/state";
import type { BuiltinTool } from "./builtin-tools.js";

/** A tool as the boundary runs it: in-process, or served on `{ns}.tool.terminal.{tool}`. */
export type ResolvedTool =
  | { kind: "builtin"; definition: ToolDefinition; tool: BuiltinTool }
  | { kind: "remote"; definition: ToolDefinition };

/**
 * Built-in tools plus the remote definitions of KV `{ns}_tools`, kept current by a watch so a
 * call costs no KV read; a name the watch has not delivered yet is read once from KV.
 */
export class ToolRegistry {
  private readonly builtins = new Map<string, BuiltinTool>();
  private readonly remote = new Map<string, ToolDefinition>();
  private watch: RecordWatch | undefined;

  private constructor(private readonly store: ToolStore) {}

  static async open(store: ToolStore, builtins: BuiltinTool[], log: Logger): Promise<ToolRegistry> {
    const registry = new ToolRegistry(store);
    for (const t of builtins) registry.builtins.set(t.definition.name, t);
    registry.watch = await store.watch(
      ({ key, value, malformed }) => {
        if (malformed) log.warn("ignoring an invalid tool definition in the tools bucket");
        if (value) registry.remote.set(key, value);
        else registry.remote.delete(key);
      },
      (err) => log.warn({ err }, "tool registry watch ended"),
    );
    return registry;
  }

  /** Finds a tool by name (built-ins first), or null when no such tool is registered. */
  async resolve(name: string): Promise<ResolvedTool | null> {
    const builtin = this.builtins.get(name);
    if (builtin) return { kind: "builtin", definition: builtin.definition, tool: builtin };
    const cached = this.remote.get(name);
    if (cached) return { kind: "remote", definition: cached };
    const def = await this.store.get(name);
    if (def) this.remote.set(name, def);
    return def ? { kind: "remote", definition: def } : null;
  }

  async stop(): Promise<void> {
    await this.watch?.stop();
  }
}
