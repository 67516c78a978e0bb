import {
  type BusConnection,
  busParts,
  type Logger,
  RuntimeEventBus,
  serveRequests,
  silentLogger,
} from "@geode/bus";
import {
  type DispatchOutcome,
  ErrorCode,
  GeodeError,
  type GuardedArguments,
  guardedArguments,
  type HandlerRegistration,
  HookInvokeLeg,
  type HookInvokeRequest,
  HookName,
  INVOCATION_ID_HEADER,
  INVOCATION_ID_PATTERN,
  isHookName,
  type Names,
  QueueGroup,
  validateHookPayload,
} from "@geode/contracts";
import { NO_OBSERVER, type ServiceObserver } from "@geode/service";
import type { Msg } from "@nats-io/transport-node";
import { HandlerRegistry } from "./handler-registry.js";
import { type ChainContext, runChain } from "./hook-chain.js";
import { InvocationAudits } from "./invocation-audits.js";
import { startWebhookBridge, type WebhookBridge } from "./webhook-bridge.js";
import type { WebhookCallOptions } from "./webhook-call.js";

export interface HookDispatcherOptions {
  /** The connection, with the interceptors its doors run (a service's `ServiceContext.bus`). */
  nc: BusConnection;
  names: Names;
  log?: Logger;
  /** Where `extension_invoked` goes; default: a bus of its own with source `hook-dispatcher`. */
  events?: RuntimeEventBus;
  /** Where its handler-call counts go (a service's `ServiceContext.observer`; default none). */
  observer?: ServiceObserver;
  /** What the webhook handlers may reach (`GEODE_WEBHOOK_ALLOW`; default public addresses only). */
  webhooks?: WebhookCallOptions;
}

export interface HookDispatcher {
  /** Stops taking invocations, answers the ones in flight, flushes audit events. */
  stop(): Promise<void>;
  /** The registrations this replica currently knows (from its KV watch). */
  handlers(): HandlerRegistration[];
  /** Invocations being answered now. */
  inFlight(): number;
  /** The webhook handlers it serves (`geode handlers add --url`). */
  readonly webhooks: WebhookBridge;
}

/**
 * Starts one hook-dispatcher replica: answers `{ns}.hook.invoke.>` in queue group
 * `hook-dispatcher`, runs each invocation's handler chain and replies with the outcome. It also
 * serves the webhook handlers (docs/webhooks.md), so that no component facing HTTP may answer a
 * handler subject or write a registration.
 */
export async function startHookDispatcher(options: HookDispatcherOptions): Promise<HookDispatcher> {
  const { names } = options;
  const bus = options.nc;
  const { nc } = busParts(bus);
  const log = options.log ?? silentLogger();
  const ownEvents = options.events === undefined;
  const events =
    options.events ?? (await RuntimeEventBus.create({ nc: bus, names, source: "hook-dispatcher", log }));
  const registry = await HandlerRegistry.start({ nc, names, log });
  const webhooks = await startWebhookBridge({ nc: bus, names, log, ...options.webhooks });
  const prefix = names.hookInvoke("");
  // Audit events of an invocation not yet published; the last ones go right ahead of its reply.
  const audits = new WeakMap<Msg, InvocationAudits>();
  // Invocations in flight that their caller may cancel, by the id of their `Geode-Invocation-Id`
  // header. Every replica hears every cancel (no queue group); only the one running it acts.
  const cancellable = new Map<string, AbortController>();
  const cancels = nc.subscribe(names.hookCancelAll, {
    callback: (err, msg) => {
      if (err) return;
      cancellable.get(msg.subject.slice(names.hookCancel("").length))?.abort();
    },
  });

  const responder = serveRequests(
    bus,
    names.hookInvokeAll,
    {
      queue: QueueGroup.HookDispatcher,
      log,
      beforeReply(msg) {
        audits.get(msg)?.publish();
        audits.delete(msg);
      },
    },
    (body, msg) =>
      dispatch(
        { nc: bus, registry, log, observer: options.observer ?? NO_OBSERVER, events, audits, cancellable },
        msg.subject.slice(prefix.length),
        body,
        msg,
      ),
  );

  let stopped: Promise<void> | undefined;
  return {
    handlers: () => registry.all(),
    inFlight: () => responder.inFlight(),
    webhooks,
    stop() {
      stopped ??= (async () => {
        await responder.drain();
        // After the invocations in flight: their webhook calls may be served by this replica.
        await webhooks.stop();
        if (!cancels.isClosed()) cancels.unsubscribe();
        await registry.stop();
        await events.flush();
        if (ownEvents) log.debug("hook-dispatcher event bus flushed");
      })();
      return stopped;
    },
  };
}

/** What one replica's invocations share. */
interface DispatchContext extends ChainContext {
  events: RuntimeEventBus;
  audits: WeakMap<Msg, InvocationAudits>;
  cancellable: Map<string, AbortController>;
}

/** One invocation: checks the request, runs its chain, and lets its caller cancel it meanwhile. */
async function dispatch(
  ctx: DispatchContext,
  hook: string,
  body: unknown,
  msg: Msg,
): Promise<DispatchOutcome> {
  const receivedAt = Date.now();
  if (!isHookName(hook))
    throw new GeodeError(ErrorCode.UnknownHook, `unknown hook: ${hook}`, { details: { hook } });
  // The leg's codec: the hook client's complete requests are taken without a schema pass.
  const request = HookInvokeLeg.request.decode(body);
  const checked = validateHookPayload(hook, request.payload);
  if (!checked.ok) throw new GeodeError(ErrorCode.InvalidPayload, checked.error, { details: { hook } });
  const pending = new InvocationAudits(ctx.events, request.correlation);
  ctx.audits.set(msg, pending);
  const invocationId = msg.headers?.get(INVOCATION_ID_HEADER) ?? "";
  const controller = INVOCATION_ID_PATTERN.test(invocationId) ? new AbortController() : undefined;
  if (controller) ctx.cancellable.set(invocationId, controller);
  try {
    return await runChain(
      { nc: ctx.nc, registry: ctx.registry, log: ctx.log, observer: ctx.observer },
      {
        hook,
        correlation: request.correlation,
        payload: checked.payload,
        guarded: guardedOf(hook, request),
        deadline: request.timeout_ms === undefined ? undefined : receivedAt + request.timeout_ms,
        audits: pending,
        ...(controller ? { signal: controller.signal } : {}),
      },
    );
  } finally {
    if (controller) ctx.cancellable.delete(invocationId);
  }
}

/**
 * A tool call's guarded argument fields, from the caller's whole input before sanitizing bounds
 * it: PreToolUse and PostToolUse carry it in their arguments; PermissionRequest's caller passes
 * the fields beside its payload, which names the call only in a bounded `detail`.
 */
function guardedOf(hook: HookName, request: HookInvokeRequest): GuardedArguments | undefined {
  const tool = request.payload["tool_name"];
  if (typeof tool !== "string") return undefined;
  if (hook === HookName.PreToolUse || hook === HookName.PostToolUse)
    return guardedArguments(tool, request.payload["arguments"]);
  if (hook !== HookName.PermissionRequest || request.guarded === undefined) return undefined;
  const given = guardedArguments(tool, request.guarded.arguments);
  return {
    arguments: given.arguments,
    oversize: [...new Set([...request.guarded.oversize, ...given.oversize])],
  };
}
