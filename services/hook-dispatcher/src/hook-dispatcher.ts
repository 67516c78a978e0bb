import { type Logger, RuntimeEventBus, serveRequests, silentLogger } from "@geode/bus";
import {
  ErrorCode,
  GeodeError,
  type HandlerRegistration,
  HookInvokeRequestSchema,
  INVOCATION_ID_HEADER,
  INVOCATION_ID_PATTERN,
  isHookName,
  type Names,
  parseOrThrow,
  QueueGroup,
  validateHookPayload,
} from "@geode/contracts";
import type { Msg, NatsConnection } from "@nats-io/transport-node";
import { HandlerRegistry } from "./handler-registry.js";
import { runChain } from "./hook-chain.js";
import { InvocationAudits } from "./invocation-audits.js";

export interface HookDispatcherOptions {
  nc: NatsConnection;
  names: Names;
  log?: Logger;
  /** Where `extension_invoked` goes; default: a bus of its own with source `hook-dispatcher`. */
  events?: RuntimeEventBus;
}

export interface HookDispatcher {
  /** Stops taking invocations, answers the ones in flight, flushes audit events. */
  stop(): Promise<void>;
  /** The registrations this replica currently knows (from its KV watch). */
  handlers(): HandlerRegistration[];
  /** Invocations being answered now. */
  inFlight(): number;
}

/**
 * Starts one hook-dispatcher replica: answers `{ns}.hook.invoke.>` in queue group
 * `hook-dispatcher`, runs each invocation's handler chain and replies with the outcome.
 */
export async function startHookDispatcher(options: HookDispatcherOptions): Promise<HookDispatcher> {
  const { nc, names } = options;
  const log = options.log ?? silentLogger();
  const ownEvents = options.events === undefined;
  const events =
    options.events ?? (await RuntimeEventBus.create({ nc, names, source: "hook-dispatcher", log }));
  const registry = await HandlerRegistry.start({ nc, names, log });
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
    nc,
    names.hookInvokeAll,
    {
      queue: QueueGroup.HookDispatcher,
      log,
      beforeReply(msg) {
        audits.get(msg)?.publish();
        audits.delete(msg);
      },
    },
    async (body, msg) => {
      const receivedAt = Date.now();
      const hook = msg.subject.slice(prefix.length);
      if (!isHookName(hook))
        throw new GeodeError(ErrorCode.UnknownHook, `unknown hook: ${hook}`, { details: { hook } });
      const request = parseOrThrow(HookInvokeRequestSchema, body, ErrorCode.InvalidRequest);
      const checked = validateHookPayload(hook, request.payload);
      if (!checked.ok) throw new GeodeError(ErrorCode.InvalidPayload, checked.error, { details: { hook } });
      const pending = new InvocationAudits(events, request.correlation);
      audits.set(msg, pending);
      const invocationId = msg.headers?.get(INVOCATION_ID_HEADER) ?? "";
      const controller = INVOCATION_ID_PATTERN.test(invocationId) ? new AbortController() : undefined;
      if (controller) cancellable.set(invocationId, controller);
      try {
        return await runChain(
          { nc, registry, log },
          {
            hook,
            correlation: request.correlation,
            payload: checked.payload,
            deadline: request.timeout_ms === undefined ? undefined : receivedAt + request.timeout_ms,
            audits: pending,
            ...(controller ? { signal: controller.signal } : {}),
          },
        );
      } finally {
        if (controller) cancellable.delete(invocationId);
      }
    },
  );

  let stopped: Promise<void> | undefined;
  return {
    handlers: () => registry.all(),
    inFlight: () => responder.inFlight(),
    stop() {
      stopped ??= (async () => {
        await responder.drain();
        if (!cancels.isClosed()) cancels.unsubscribe();
        await registry.stop();
        await events.flush();
        if (ownEvents) log.debug("hook-dispatcher event bus flushed");
      })();
      return stopped;
    },
  };
}
