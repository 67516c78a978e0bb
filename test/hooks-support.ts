/**
 * Shared pieces of the hook tests: a dispatcher per test file, handlers that are known to the
 * dispatcher before a test invokes, and raw (no SDK) handler plumbing.
 */
import { ensureBucket } from "@geode/bus";
import type { HandlerRegistration, HookName } from "@geode/contracts";
import { type HookDispatcher, startHookDispatcher } from "@geode/hook-dispatcher";
import { createHookClient, type HookClient } from "@geode/runtime";
import { type GeodeConnection, type HookHandler, type ServeHookOptions, serveHook } from "@geode/sdk";
import { type TestEnv, useTestEnv, waitFor } from "@geode/testing";
import { afterAll, afterEach, beforeAll } from "vitest";

export const CORRELATION = {
  session_id: "s-1",
  turn_id: "t-1",
  step_id: "step-1",
  run_id: "r-1",
  session_generation: 2,
  verify_attempt: 0,
  tool_call_id: "call-1",
  llm_call_id: "llm-1",
  llm_attempt_id: "a-1",
};

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** A scope of handlers that are all closed (and gone from the dispatcher) at the end. */
export class HandlerScope {
  private readonly closers: Array<() => Promise<void>> = [];
  private readonly keys: string[] = [];
  /** What this scope served or registered, as `{hook}.{name}`. */
  private readonly mine = new Set<string>();

  constructor(
    private readonly env: TestEnv,
    private readonly dispatchers: HookDispatcher[],
  ) {}

  get conn(): GeodeConnection {
    return { nc: this.env.nc, names: this.env.names };
  }

  /** Serves an SDK handler and waits until every dispatcher knows it. */
  async serve(
    hook: HookName,
    options: ServeHookOptions,
    handler: HookHandler,
    conn: GeodeConnection = this.conn,
  ): Promise<{ close(): Promise<void> }> {
    const served = await serveHook(conn, hook, options, handler);
    this.closers.push(() => served.close());
    this.mine.add(`${hook}.${options.name}`);
    await this.known(hook, options.name);
    return served;
  }

  /** Writes a registration straight into KV (a raw handler or a dead one) and waits for it. */
  async register(reg: Partial<HandlerRegistration> & { hook: HookName; name: string }): Promise<void> {
    const kv = await ensureBucket(this.env.nc, this.env.names, "hookHandlers");
    const value: HandlerRegistration = {
      priority: 100,
      timeout_ms: 10_000,
      schema_version: "geode.public-hook.v2",
      failure_mode: "open",
      match: null,
      heartbeat_at: Date.now(),
      lease_ms: 60_000,
      ...reg,
    };
    const key = this.env.names.handlerKey(reg.hook, reg.name);
    await kv.put(key, JSON.stringify(value));
    this.keys.push(key);
    this.mine.add(`${reg.hook}.${reg.name}`);
    await this.known(reg.hook, reg.name);
  }

  /** Subscribes a raw NATS handler that replies with whatever `reply` returns (JSON). */
  raw(hook: HookName, name: string, reply: (envelope: Record<string, unknown>) => unknown): void {
    const sub = this.env.nc.subscribe(this.env.names.hookHandler(hook, name), {
      queue: name,
      callback: (_err, msg) => {
        msg.respond(JSON.stringify(reply(msg.json())));
      },
    });
    this.closers.push(async () => sub.unsubscribe());
  }

  async known(hook: HookName, name: string): Promise<void> {
    await waitFor(() =>
      this.dispatchers.every((d) => d.handlers().some((r) => r.hook === hook && r.name === name)),
    );
  }

  /** Closes everything and waits until the dispatchers have forgotten every registration of this scope. */
  async close(): Promise<void> {
    for (const close of this.closers.splice(0)) await close();
    if (this.keys.length > 0) {
      const kv = await ensureBucket(this.env.nc, this.env.names, "hookHandlers");
      for (const key of this.keys.splice(0)) await kv.delete(key);
    }
    const mine = this.mine;
    await waitFor(() =>
      this.dispatchers.every((d) => !d.handlers().some((r) => mine.has(`${r.hook}.${r.name}`))),
    );
    mine.clear();
  }
}

export async function startDispatcher(env: TestEnv): Promise<HookDispatcher> {
  return startHookDispatcher({ nc: env.nc, names: env.names });
}

/**
 * The usual hook test file: its own namespace, one dispatcher, a hook client, and a handler scope
 * emptied after every test. Call at the top of the file; use the getters inside tests.
 */
export function useHookFixture(): {
  env: () => TestEnv;
  hooks: () => HookClient;
  scope: () => HandlerScope;
} {
  const env = useTestEnv();
  let dispatcher: HookDispatcher | undefined;
  let hooks: HookClient | undefined;
  let scope: HandlerScope | undefined;
  beforeAll(async () => {
    dispatcher = await startDispatcher(env());
    hooks = createHookClient(env().nc, env().names);
    scope = new HandlerScope(env(), [dispatcher]);
  });
  afterEach(async () => {
    await scope?.close();
  });
  afterAll(async () => {
    await dispatcher?.stop();
  });
  const ready = <T>(v: T | undefined): T => {
    if (v === undefined) throw new Error("hook fixture is not ready: use it inside a test or hook");
    return v;
  };
  return { env, hooks: () => ready(hooks), scope: () => ready(scope) };
}
