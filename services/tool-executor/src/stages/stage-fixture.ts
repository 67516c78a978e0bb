/**
 * What the stage tests share: a call context on a real NATS namespace (tools bucket, receipts,
 * event bus), with the hook-dispatcher replaced by a scripted `invokeHook` so each test states the
 * outcome a stage reacts to. The boundary with a real dispatcher is tested in test/tools-*.
 */
import { RuntimeEventBus, silentLogger } from "@geode/bus";
import type {
  DispatchOutcome,
  EventEnvelope,
  HookName,
  TimelineRecord,
  ToolDefinition,
} from "@geode/contracts";
import { MiddlewareRegistry, type ToolCallResult } from "@geode/middleware";
import { NO_OBSERVER } from "@geode/service";
import { ReceiptStore, ResultStore, ToolStore } from "@geode/state";
import { scriptedOutcome, type TestEnv, useFixture } from "@geode/testing";
import type { BuiltinTool } from "../builtin-tools.js";
import { SchemaValidator } from "../schema-validator.js";
import { toolExecutorConfig } from "../tool-executor-config.js";
import { createToolPolicy } from "../tool-policy.js";
import { ToolRegistry } from "../tool-registry.js";
import { type BoundaryDeps, type InvokeHook, openToolCall, type ToolCall } from "./tool-call.js";

/** An in-process tool with a definition built from a few fields. */
export function stageTool(
  name: string,
  fields: Partial<ToolDefinition> = {},
  run: (args: Record<string, unknown>, ctx: { signal: AbortSignal }) => Promise<ToolCallResult> = async (
    args,
  ) => ({ result: { echoed: args }, has_error: false }),
): BuiltinTool {
  return {
    definition: {
      name,
      description: `stage test tool ${name}`,
      input_schema: { type: "object" },
      effect: "read",
      requires_approval: false,
      ...fields,
    },
    run,
  };
}

/** A dispatch outcome as the dispatcher would reply it. */
export const outcome = scriptedOutcome;

export type HookScript = (
  hook: HookName,
  payload: Record<string, unknown>,
) => DispatchOutcome | Promise<DispatchOutcome>;

export interface StageHarness {
  deps: BoundaryDeps;
  /** Hooks invoked so far, in order. */
  invoked: Array<{ hook: HookName; payload: Record<string, unknown> }>;
  /** Events and timeline records published so far (in-process copies), in order. */
  seen: Array<EventEnvelope | TimelineRecord>;
  /** A call context for a request body, as the boundary opens it. */
  open(body: Record<string, unknown>): ToolCall;
  stop(): Promise<void>;
}

/** Deps for the stages on the test's namespace; `hooks` answers every hook invocation. */
export async function stageHarness(
  env: TestEnv,
  options: {
    tools?: BuiltinTool[];
    hooks?: HookScript;
    deny?: string[];
    middleware?: MiddlewareRegistry;
    config?: Parameters<typeof toolExecutorConfig>[0];
  } = {},
): Promise<StageHarness> {
  const { nc, names } = env;
  const events = await RuntimeEventBus.create({ nc, names, source: "stage-test" });
  const seen: Array<EventEnvelope | TimelineRecord> = [];
  events.subscribe((e) => {
    seen.push(e);
  });
  events.subscribeTimeline((r) => {
    seen.push(r);
  });
  const log = silentLogger();
  const tools = await ToolRegistry.open(await ToolStore.open({ nc, names }), options.tools ?? [], log);
  const invoked: StageHarness["invoked"] = [];
  const script = options.hooks ?? ((hook, payload) => outcome(hook, payload));
  const invokeHook: InvokeHook = async (hook, payload) => {
    const p = payload as Record<string, unknown>;
    invoked.push({ hook, payload: p });
    return script(hook, p);
  };
  const config = toolExecutorConfig({ deny: options.deny ?? [], toolRoot: ".", ...options.config });
  const deps: BoundaryDeps = {
    nc,
    names,
    log,
    observer: NO_OBSERVER,
    events,
    invokeHook,
    tools,
    policy: createToolPolicy(config),
    validator: new SchemaValidator(),
    receipts: await ReceiptStore.open({ nc, names }),
    results: new ResultStore({ nc, names }),
    middleware: options.middleware ?? new MiddlewareRegistry(),
    config,
  };
  return {
    deps,
    invoked,
    seen,
    open: (body) => openToolCall(deps, { arguments: {}, ...body }),
    async stop() {
      await tools.stop();
      await events.close();
    },
  };
}

/** A test file's harness, built once on its own namespace; use the getters inside tests. */
export function useStageHarness(options: Parameters<typeof stageHarness>[1] = {}): {
  h: () => StageHarness;
  env: () => TestEnv;
} {
  const { fixture, env } = useFixture(
    (e) => stageHarness(e, options),
    (h) => h.stop(),
  );
  return { h: fixture, env };
}
