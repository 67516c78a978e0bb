import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { RuntimeEventBus, requestJson } from "@geode/bus";
import type { EventEnvelope, HealthReply, HookName, ToolDefinition, ToolEffect } from "@geode/contracts";
import { type HookDispatcher, startHookDispatcher } from "@geode/hook-dispatcher";
import { MiddlewareRegistry, type ToolCallResult } from "@geode/middleware";
import {
  type HookHandler,
  type ServedHook,
  type ServedTool,
  type ServeHookOptions,
  type ServeToolOptions,
  serveHook,
  serveTool,
  type ToolHandler,
} from "@geode/sdk";
import { type SpawnedProcess, spawnService, type TestEnv, waitFor } from "@geode/testing";
import {
  type BuiltinTool,
  builtinTools,
  startToolExecutor,
  type ToolExecutor,
  type ToolExecutorConfig,
} from "@geode/tool-executor";

/** An in-process tool that records every terminal call. */
export interface RecordingTool extends BuiltinTool {
  calls: Array<Record<string, unknown>>;
}

export function recordingTool(
  name: string,
  effect: ToolEffect,
  options: {
    requires_approval?: boolean;
    input_schema?: Record<string, unknown>;
    run?: (args: Record<string, unknown>) => Promise<ToolCallResult> | ToolCallResult;
  } = {},
): RecordingTool {
  const calls: Array<Record<string, unknown>> = [];
  const definition: ToolDefinition = {
    name,
    description: `test tool ${name}`,
    input_schema: options.input_schema ?? { type: "object" },
    effect,
    requires_approval: options.requires_approval ?? false,
  };
  return {
    definition,
    calls,
    async run(args) {
      calls.push(args);
      if (options.run) return options.run(args);
      return { result: { ok: true, call: calls.length }, has_error: false };
    },
  };
}

export interface ToolStack {
  events: RuntimeEventBus;
  /** Every event this executor published, in order (in-process copies). */
  seen: EventEnvelope[];
  dispatcher: HookDispatcher;
  executor: ToolExecutor;
  middleware: MiddlewareRegistry;
  toolRoot: string;
  /** Serves a handler and waits until the dispatcher knows it. */
  hook(hook: HookName, options: ServeHookOptions, handler: HookHandler): Promise<ServedHook>;
  stop(): Promise<void>;
}

/** A hook-dispatcher and a tool-executor in this process, on the test's namespace. */
export async function startToolStack(
  env: TestEnv,
  options: { tools?: BuiltinTool[]; config?: Partial<ToolExecutorConfig> } = {},
): Promise<ToolStack> {
  const { nc, names } = env;
  const toolRoot = mkdtempSync(path.join(os.tmpdir(), "geode-tools-"));
  const events = await RuntimeEventBus.create({ nc, names, source: "tool-executor" });
  const seen: EventEnvelope[] = [];
  events.subscribe((e) => {
    seen.push(e);
  });
  const middleware = new MiddlewareRegistry();
  const dispatcher = await startHookDispatcher({ nc, names });
  const executor = await startToolExecutor({
    nc,
    names,
    events,
    middleware,
    tools: [...builtinTools(toolRoot), ...(options.tools ?? [])],
    config: { toolRoot, approvalTimeoutMs: 20_000, ...options.config },
  });
  const served: ServedHook[] = [];
  return {
    events,
    seen,
    dispatcher,
    executor,
    middleware,
    toolRoot,
    async hook(hook, opts, handler) {
      const h = await serveHook({ nc, names }, hook, opts, handler);
      served.push(h);
      await waitFor(() => dispatcher.handlers().some((r) => r.hook === hook && r.name === opts.name));
      return h;
    },
    async stop() {
      for (const h of served) await h.close().catch(() => undefined);
      await executor.stop();
      await dispatcher.stop();
      await events.flush();
    },
  };
}

/** A remote tool on a connection of its own, with an open input schema and no approval. */
export async function remoteTool(
  env: TestEnv,
  definition: Pick<ToolDefinition, "name" | "effect">,
  handler: ToolHandler,
  options: ServeToolOptions = {},
): Promise<ServedTool> {
  const provider = await env.connect(`provider-${definition.name}`);
  return serveTool(
    { nc: provider, names: env.names },
    {
      description: `test tool ${definition.name}`,
      input_schema: { type: "object" },
      requires_approval: false,
      ...definition,
    },
    handler,
    options,
  );
}

/** A remote tool (its own connection) that runs until the test lets go. */
export interface BlockingTool {
  /** Terminal calls so far. */
  calls(): number;
  /** Lets every call (running or later) finish with `result`. */
  release(): void;
  close(): Promise<void>;
}

export async function blockingTool(
  env: TestEnv,
  definition: Omit<ToolDefinition, "description" | "input_schema">,
  result: Record<string, unknown> = { done: true },
): Promise<BlockingTool> {
  const provider = await env.connect(`provider-${definition.name}`);
  let calls = 0;
  let release: () => void = () => undefined;
  const released = new Promise<void>((r) => {
    release = r;
  });
  const served = await serveTool(
    { nc: provider, names: env.names },
    { description: "runs until the test lets go", input_schema: { type: "object" }, ...definition },
    async () => {
      calls++;
      await released;
      return { result };
    },
  );
  return {
    calls: () => calls,
    release: () => release(),
    async close() {
      release();
      await served.close();
    },
  };
}

/**
 * Runs the tool-executor as its own process on the test's namespace (`extraEnv` added) and resolves
 * once it answers its health request (it logs "started" before the server has seen its
 * subscriptions).
 */
export async function spawnToolExecutor(
  env: TestEnv,
  extraEnv: Record<string, string>,
): Promise<SpawnedProcess> {
  const child = spawnService("services/tool-executor/src/main.ts", {
    ...env.env,
    LOG_LEVEL: "info",
    ...extraEnv,
  });
  try {
    await child.waitForOutput(/tool-executor started/);
    await waitFor(() =>
      requestJson(env.nc, env.names.health("tool-executor"), {}, { timeoutMs: 1_000 }).then(
        (r) => (r as HealthReply).status === "ok",
        () => false,
      ),
    );
    return child;
  } catch (err) {
    await child.stop("SIGKILL");
    throw err;
  }
}
