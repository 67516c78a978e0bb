import type { BusInterceptor, Next, RequestInput, ServeInput } from "@geode/bus";
import {
  type DispatchOutcome,
  isHookName,
  type Names,
  type ToolExecuteReply,
  type VerifyReply,
} from "@geode/contracts";
import type { Msg } from "@nats-io/transport-node";
import type { Attributes } from "@opentelemetry/api";
import { metrics } from "./metrics.js";
import { withSpan } from "./tracing.js";

type ServeNext = Next<ServeInput, Promise<unknown>>;

/** Seconds since `startedAt` (a `performance.now()` reading). */
function elapsed(startedAt: number): number {
  return (performance.now() - startedAt) / 1000;
}

/** `{ns}.hook.invoke.{hook}`: its span, and its count and duration by status (ok, blocked, error). */
async function hookInvocation(hook: string, input: ServeInput, next: ServeNext): Promise<unknown> {
  const startedAt = performance.now();
  try {
    const outcome = (await withSpan("geode.hook.invoke", { "geode.hook": hook }, () =>
      next(input),
    )) as DispatchOutcome;
    metrics().hookInvocation(hook, outcome.blocked ? "blocked" : "ok", elapsed(startedAt));
    return outcome;
  } catch (err) {
    // An unknown hook is counted under one label: subjects must not mint series.
    metrics().hookInvocation(isHookName(hook) ? hook : "unknown", "error", elapsed(startedAt));
    throw err;
  }
}

/**
 * `{ns}.tool.execute`: its span and its count by the tool's registered name (the handler's `tool`
 * tag; a name no tool has is `unknown`: callers pick names) and status; a receipt's outcome.
 */
async function toolCall(input: ServeInput, next: ServeNext): Promise<unknown> {
  const attributes: Attributes = {};
  const tool = () => input.tags["tool"] ?? "unknown";
  try {
    const reply = (await withSpan("geode.tool.execute", attributes, async () => {
      try {
        return await next(input);
      } finally {
        attributes["geode.tool"] = tool();
      }
    })) as ToolExecuteReply;
    metrics().toolCall(tool(), reply.status);
    if (reply.receipt) metrics().receiptOutcome(reply.status);
    return reply;
  } catch (err) {
    metrics().toolCall(tool(), "error");
    throw err;
  }
}

/** `{ns}.verify.finalize`: its span, and the decision's count by policy action. */
async function verifyFinalize(input: ServeInput, next: ServeNext): Promise<unknown> {
  const reply = (await withSpan("geode.verify.finalize", {}, () => next(input))) as VerifyReply;
  metrics().verifyDecision(reply.policy_action);
  return reply;
}

/**
 * The spans and metrics of the plane's request legs (docs/operations.md, "Metrics"), taken at the
 * bus's doors: hook invocations, tool calls and verify decisions where they are served, handler
 * calls where the dispatcher sends them, and every event published.
 */
export function legTelemetry(names: Names): BusInterceptor {
  const hookPrefix = names.hookInvoke("");
  const handlerPrefix = names.hookHandlerAll.slice(0, -1); // `{ns}.hook.handler.`
  return {
    serve(input, next) {
      const { subject } = input;
      if (subject.startsWith(hookPrefix))
        return hookInvocation(subject.slice(hookPrefix.length), input, next);
      if (subject === names.toolExecute) return toolCall(input, next);
      if (subject === names.verifyFinalize) return verifyFinalize(input, next);
      return next(input);
    },
    request(input: RequestInput, next: Next<RequestInput, Promise<Msg>>) {
      if (!input.subject.startsWith(handlerPrefix)) return next(input);
      // `{ns}.hook.handler.{hook}.{handler}`: a hook name has no dot, a handler's name may.
      const rest = input.subject.slice(handlerPrefix.length);
      const dot = rest.indexOf(".");
      const attributes = { "geode.hook": rest.slice(0, dot), "geode.handler": rest.slice(dot + 1) };
      return withSpan("geode.hook.handler", attributes, () => next(input));
    },
    publish(input, next) {
      return next(input).then((stored) => {
        if (stored) metrics().eventPublished();
        else metrics().eventPublishFailed();
        return stored;
      });
    },
  };
}
