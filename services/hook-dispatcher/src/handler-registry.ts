import { ensureBucket, type Logger } from "@geode/bus";
import {
  type HandlerRegistration,
  HandlerRegistrationSchema,
  type HookName,
  isHookName,
  type Names,
  TOOL_HOOKS,
  type ToolGlob,
  toolGlob,
} from "@geode/contracts";
import type { KV, KvWatchEntry } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";

/** One live registration, with its tool filter compiled once. */
export interface RegisteredHandler {
  readonly registration: HandlerRegistration;
  /** The handler's subject, `{ns}.hook.handler.{HookName}.{handler}`. */
  readonly subject: string;
  /** Tool-name filter (tool hooks only); null means every call. */
  readonly match: ToolGlob | null;
}

const EMPTY: readonly RegisteredHandler[] = Object.freeze([]);

/**
 * The hook handler registry kept in memory: a KV watch of `{ns}_hook_handlers` keeps, per hook, the
 * registrations sorted by priority then name, so an invocation never reads KV.
 */
export class HandlerRegistry {
  private readonly byKey = new Map<string, RegisteredHandler>();
  private sorted = new Map<HookName, readonly RegisteredHandler[]>();
  private watcher: Awaited<ReturnType<KV["watch"]>> | undefined;
  private loop: Promise<void> | undefined;

  private constructor(
    private readonly names: Names,
    private readonly log: Logger,
  ) {}

  /** Opens (or creates) the bucket, loads the current registrations and follows updates. */
  static async start(options: { nc: NatsConnection; names: Names; log: Logger }): Promise<HandlerRegistry> {
    const registry = new HandlerRegistry(options.names, options.log);
    const kv = await ensureBucket(options.nc, options.names, "hookHandlers");
    await registry.follow(kv);
    return registry;
  }

  /** Registrations of `hook` in call order (ascending priority, ties by name). */
  handlers(hook: HookName): readonly RegisteredHandler[] {
    return this.sorted.get(hook) ?? EMPTY;
  }

  /** Every registration currently known (for health and tests). */
  all(): HandlerRegistration[] {
    return [...this.byKey.values()].map((h) => h.registration);
  }

  async stop(): Promise<void> {
    this.watcher?.stop();
    await this.loop;
  }

  private async follow(kv: KV): Promise<void> {
    // The last message of the stream is the newest entry of some key, so once the watch has
    // delivered that revision the initial snapshot is complete.
    const status = await kv.status();
    const lastSeq = status.streamInfo.state.last_seq;
    const initialEmpty = status.streamInfo.state.messages === 0;
    let markReady: () => void = () => undefined;
    const ready = new Promise<void>((resolve) => {
      markReady = resolve;
    });
    if (initialEmpty) markReady();
    const watcher = await kv.watch({ key: ">" });
    this.watcher = watcher;
    this.loop = (async () => {
      for await (const entry of watcher) {
        this.apply(entry);
        if (entry.revision >= lastSeq) markReady();
      }
      markReady();
    })().catch((err: unknown) => {
      this.log.error({ err }, "hook handler registry watch failed");
      markReady();
    });
    await ready;
  }

  private apply(entry: KvWatchEntry): void {
    const key = entry.key;
    if (entry.operation !== "PUT") {
      if (this.byKey.delete(key)) this.rebuild();
      return;
    }
    let parsed: HandlerRegistration | undefined;
    try {
      const result = HandlerRegistrationSchema.safeParse(entry.json());
      if (result.success && key === `${result.data.hook}.${result.data.name}`) parsed = result.data;
    } catch {
      // not JSON: treated as absent below
    }
    if (!parsed) {
      this.log.warn({ key }, "ignoring malformed hook handler registration");
      if (this.byKey.delete(key)) this.rebuild();
      return;
    }
    const patterns = parsed.match?.tool_name;
    this.byKey.set(key, {
      registration: parsed,
      subject: this.names.hookHandler(parsed.hook, parsed.name),
      match: patterns && TOOL_HOOKS.includes(parsed.hook) ? toolGlob(patterns) : null,
    });
    this.rebuild();
  }

  private rebuild(): void {
    const next = new Map<HookName, RegisteredHandler[]>();
    for (const h of this.byKey.values()) {
      const hook = h.registration.hook;
      if (!isHookName(hook)) continue;
      const list = next.get(hook);
      if (list) list.push(h);
      else next.set(hook, [h]);
    }
    for (const list of next.values()) {
      list.sort((a, b) => {
        const p = a.registration.priority - b.registration.priority;
        if (p !== 0) return p;
        const an = a.registration.name;
        const bn = b.registration.name;
        return an < bn ? -1 : an > bn ? 1 : 0;
      });
    }
    this.sorted = next;
  }
}
