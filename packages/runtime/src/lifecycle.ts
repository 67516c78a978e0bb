import { createHookClient, type GeodeConnection, type HookClient, RuntimeEventBus } from "@geode/bus";
import type { LifecycleDeps } from "@geode/lifecycle";
import { SessionStore } from "@geode/state";

/** What the lifecycle helpers (sessions, sub-agents, compaction) take besides the connection. */
export interface LifecycleOptions {
  /** Publisher of events and timeline records (default: a bus with source `runtime`, made on first use). */
  events?: RuntimeEventBus;
  /** Default: a hook client on the connection. */
  hooks?: HookClient;
  /** Budget of each hook invocation (default 30 s). */
  hookTimeoutMs?: number;
}

/**
 * The lifecycle's dependencies on this connection, made on first use and kept: the hook client,
 * the event bus (the one given, or one of its own with source `runtime`) and the sessions bucket.
 */
export function lifecycleDeps(
  conn: GeodeConnection,
  options: LifecycleOptions,
): () => Promise<LifecycleDeps & { sessions: SessionStore }> {
  const hooks = options.hooks ?? createHookClient(conn, conn.names);
  let deps: Promise<LifecycleDeps & { sessions: SessionStore }> | undefined;
  return () => {
    deps ??= (async () => ({
      hooks,
      events:
        options.events ?? (await RuntimeEventBus.create({ nc: conn, names: conn.names, source: "runtime" })),
      sessions: await SessionStore.open(conn),
      hookTimeoutMs: options.hookTimeoutMs,
    }))();
    // A failure (NATS down) is not kept: the next call tries again.
    deps.catch(() => {
      deps = undefined;
    });
    return deps;
  };
}
