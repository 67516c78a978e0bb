import {
  type BusConnection,
  busParts,
  createHookClient,
  ensureResultStore,
  type Logger,
  RuntimeEventBus,
  serveRequests,
  silentLogger,
} from "@geode/bus";
import { type Names, QueueGroup } from "@geode/contracts";
import { MiddlewareRegistry } from "@geode/middleware";
import { NO_OBSERVER, type ServiceObserver } from "@geode/service";
import { ReceiptStore, ResultStore, ToolStore } from "@geode/state";
import { type BuiltinTool, builtinTools } from "./builtin-tools.js";
import { loadMiddlewareModules } from "./middleware-loader.js";
import { SchemaValidator } from "./schema-validator.js";
import { type BoundaryDeps, type InvokeHook, runToolCall } from "./tool-boundary.js";
import { type ToolExecutorConfig, toolExecutorConfig } from "./tool-executor-config.js";
import { createToolPolicy } from "./tool-policy.js";
import { ToolRegistry } from "./tool-registry.js";

export { type BuiltinTool, builtinTools } from "./builtin-tools.js";
export { TOOL_EXECUTOR_ENV, type ToolExecutorConfig } from "./tool-executor-config.js";

export interface ToolExecutorOptions {
  /** The connection, with the interceptors its doors run (a service's `ServiceContext.bus`). */
  nc: BusConnection;
  names: Names;
  log?: Logger;
  /** Where its stage spans and approval counts go (a service's `ServiceContext.observer`; default none). */
  observer?: ServiceObserver;
  /** Where runtime events go; default: a bus of its own (source `tool-executor`). */
  events?: RuntimeEventBus;
  /** Policy lists, time limits, tool folder, middleware modules; what is left out has its default. */
  config?: Partial<ToolExecutorConfig>;
  /** In-process tools; default: the built-ins (`echo`, `clock.now`, `fs.read`, `fs.write`). */
  tools?: BuiltinTool[];
  /** Trusted tool middleware; modules named in `config.middlewareModules` are loaded into it. */
  middleware?: MiddlewareRegistry;
}

export interface ToolExecutor {
  stop(): Promise<void>;
}

/** Starts the tool-executor on `{ns}.tool.execute` (queue group `tool-executor`). */
export async function startToolExecutor(options: ToolExecutorOptions): Promise<ToolExecutor> {
  const { names: n } = options;
  const bus = options.nc;
  const { nc } = busParts(bus);
  const log = options.log ?? silentLogger();
  const config = toolExecutorConfig(options.config);
  const middleware = options.middleware ?? new MiddlewareRegistry();
  await loadMiddlewareModules(config.middlewareModules, middleware);
  // Not batched: each event goes on the wire when it is emitted, so it is ahead of the request of
  // the step that follows it (the terminal call, PostToolUse) on this connection.
  const events =
    options.events ?? (await RuntimeEventBus.create({ nc: bus, names: n, source: "tool-executor", log }));
  const conn = { nc, names: n };
  const [receipts, toolStore] = await Promise.all([
    ReceiptStore.open(conn),
    ToolStore.open(conn),
    ensureResultStore(nc, n, { ttlMs: config.resultTtlMs, maxBytes: config.resultStoreBytes }),
  ]);
  const tools = await ToolRegistry.open(toolStore, options.tools ?? builtinTools(config.toolRoot), log);
  const hookClient = createHookClient(bus, n);
  const invokeHook: InvokeHook = (hook, payload, correlation, { timeoutMs, guarded }) =>
    hookClient.invoke(hook, payload, correlation, { timeoutMs, ...(guarded ? { guarded } : {}) });
  const deps: BoundaryDeps = {
    nc: bus,
    names: n,
    log,
    observer: options.observer ?? NO_OBSERVER,
    events,
    invokeHook,
    tools,
    policy: createToolPolicy(config),
    validator: new SchemaValidator(),
    receipts,
    results: new ResultStore(conn),
    middleware,
    config,
  };
  const responder = serveRequests(
    bus,
    n.toolExecute,
    { queue: QueueGroup.ToolExecutor, log },
    (body, _msg, tags) => runToolCall(deps, body, tags),
  );
  return {
    async stop() {
      await responder.drain();
      await tools.stop();
      if (!options.events) await events.flush();
    },
  };
}
