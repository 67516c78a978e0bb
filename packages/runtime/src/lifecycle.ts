import { createHookClient, type GeodeConnection, type HookClient, RuntimeEventBus } from "@geode/bus";
import {
  type Correlation,
  type DispatchOutcome,
  type GeodeError,
  type HookName,
  type HookPayloadInput,
  toGeodeError,
} from "@geode/contracts";
import { SessionStore } from "@geode/state";

/** Invokes a lifecycle hook; a failure is returned, not thrown (the durable state already changed). */
export async function invokeLifecycleHook<H extends HookName>(
  hooks: HookClient,
  hook: H,
  payload: HookPayloadInput<H>,
  corr: Correlation,
  timeoutMs: number | undefined,
): Promise<{ outcome: DispatchOutcome | null; hookError?: GeodeError }> {
  try {
    const outcome = await hooks.invoke(hook, payload, corr, timeoutMs ? { timeoutMs } : {});
    return { outcome };
  } catch (err) {
    return { outcome: null, hookError: toGeodeError(err) };
  }
}

/** Creates a value on first use and keeps it. */
function lazy<T>(create: () => Promise<T>): () => Promise<T> {
  let value: Promise<T> | undefined;
  return () => {
    value ??= create();
    return value;
  };
}

/** The event bus of a runtime helper: the one given, or one of its own (source `runtime`) on first use. */
function lazyEvents(conn: GeodeConnection, given?: RuntimeEventBus): () => Promise<RuntimeEventBus> {
  return given
    ? () => Promise.resolve(given)
    : lazy(() => RuntimeEventBus.create({ nc: conn.nc, names: conn.names, source: "runtime" }));
}

/** The sessions bucket, opened on first use. */
export function lazySessionStore(conn: GeodeConnection): () => Promise<SessionStore> {
  return lazy(() => SessionStore.open(conn));
}

/** What the lifecycle helpers (sessions, sub-agents, compaction) take besides the connection. */
export interface LifecycleOptions {
  /** Publisher of events and timeline records (default: a bus with source `runtime`, made on first use). */
  events?: RuntimeEventBus;
  /** Default: a hook client on the connection. */
  hooks?: HookClient;
  /** Budget of each hook invocation (default 30 s). */
  hookTimeoutMs?: number;
}

/** The hook client and the (lazy) event bus of a lifecycle helper. */
export function lifecycleDeps(
  conn: GeodeConnection,
  options: LifecycleOptions,
): { hooks: HookClient; events: () => Promise<RuntimeEventBus> } {
  return {
    hooks: options.hooks ?? createHookClient(conn.nc, conn.names),
    events: lazyEvents(conn, options.events),
  };
}
