import type { Logger } from "@geode/bus";
import { type ToolDefinition, ToolDefinitionSchema } from "@geode/contracts";
import { type KV, type KvWatchEntry, KvWatchInclude } from "@nats-io/kv";
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
  private stopWatch: (() => void) | undefined;

  private constructor(
    private readonly kv: KV,
    private readonly log: Logger,
  ) {}

  static async open(kv: KV, builtins: BuiltinTool[], log: Logger): Promise<ToolRegistry> {
    const registry = new ToolRegistry(kv, log);
    for (const t of builtins) registry.builtins.set(t.definition.name, t);
    const watcher = await kv.watch({ include: KvWatchInclude.LastValue });
    registry.stopWatch = () => watcher.stop();
    void (async () => {
      for await (const e of watcher) registry.apply(e);
    })().catch((err: unknown) => log.warn({ err }, "tool registry watch ended"));
    return registry;
  }

  /** Finds a tool by name (built-ins first), or null when no such tool is registered. */
  async resolve(name: string): Promise<ResolvedTool | null> {
    const builtin = this.builtins.get(name);
    if (builtin) return { kind: "builtin", definition: builtin.definition, tool: builtin };
    const cached = this.remote.get(name);
    if (cached) return { kind: "remote", definition: cached };
    if (!/^[-/=\w]+(\.[-/=\w]+)*$/.test(name)) return null;
    const entry = await this.kv.get(name).catch(() => null);
    if (entry?.operation !== "PUT") return null;
    const def = this.parse(entry.json());
    if (def) this.remote.set(name, def);
    return def ? { kind: "remote", definition: def } : null;
  }

  stop(): void {
    this.stopWatch?.();
  }

  private apply(e: KvWatchEntry): void {
    if (e.operation !== "PUT") {
      this.remote.delete(e.key);
      return;
    }
    const def = this.parse(e.json());
    if (def && def.name === e.key) this.remote.set(e.key, def);
    else this.remote.delete(e.key);
  }

  private parse(value: unknown): ToolDefinition | null {
    const parsed = ToolDefinitionSchema.safeParse(value);
    if (!parsed.success) {
      this.log.warn("ignoring an invalid tool definition in the tools bucket");
      return null;
    }
    return parsed.data;
  }
}
