import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { RuntimeEventBus } from "@geode/bus";
import type { EventEnvelope, HookName, ToolDefinition, ToolEffect } from "@geode/contracts";
import { type HookDispatcher, startHookDispatcher } from "@geode/hook-dispatcher";
import { MiddlewareRegistry, type ToolCallResult } from "@geode/middleware";
import { type HookHandler, type ServedHook, type ServeHookOptions, serveHook } from "@geode/sdk";
import type { TestEnv } from "@geode/testing";
import { waitFor } from "@geode/testing";
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
