import type { Logger } from "@geode/bus";
import {
  type HandlerRegistration,
  type HookName,
  isHookName,
  type Names,
  TOOL_HOOKS,
  type ToolGlob,
  toolGlob,
} from "@geode/contracts";
import { HandlerRegistrations, type RecordChange, type RecordWatch } from "@geode/state";
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
  private watch: RecordWatch | undefined;

  private constructor(
    private readonly names: Names,
    private readonly log: Logger,
  ) {}

  /** Opens (or creates) the bucket, loads the current registrations and follows updates. */
  static async start(options: { nc: NatsConnection; names: Names; log: Logger }): Promise<HandlerRegistry> {
    const registry = new HandlerRegistry(options.names, options.log);
    const store = await HandlerRegistrations.open(options);
    registry.watch = await store.watch(
      (change) => registry.apply(change),
      (err) => options.log.error({ err }, "hook handler registry watch failed"),
    );
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
    await this.watch?.stop();
  }

  private apply({ key, value, malformed }: RecordChange<HandlerRegistration>): void {
    if (malformed) this.log.warn({ key }, "ignoring malformed hook handler registration");
    if (!value) {
      if (this.byKey.delete(key)) this.rebuild();
      return;
    }
    const patterns = value.match?.tool_name;
    this.byKey.set(key, {
      registration: value,
      subject: this.names.hookHandler(value.hook, value.name),
      match: patterns && TOOL_HOOKS.includes(value.hook) ? toolGlob(patterns) : null,
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
