import { type BusConnection, RequestFailedError, requestJson } from "@geode/bus";
import {
  ErrorCode,
  encodeGuardedArguments,
  GeodeError,
  GUARDED_ARGUMENTS_HEADER,
  HookHandlerLeg,
  type HookName,
  hookEnvelope,
  isInvalidDecision,
  isMalformedReply,
  sanitizeText,
} from "@geode/contracts";
import { headers } from "@nats-io/transport-node";
import type { RegisteredHandler } from "../handler-registry.js";
import type { ChainInput, ChainView, HandlerErrorType } from "./chain-step.js";

/** Longest handler error message kept in `handler_errors`. */
const ERROR_MESSAGE_CHARS = 1024;
/**
 * A decision still to be checked against the hook's rules, or why the call failed: a handler error,
 * or the end of the invocation (`abort`) when the caller cancelled or its deadline passed meanwhile.
 */
export type CallResult =
  | { ok: true; decision: unknown; auditReason?: string | undefined }
  | { ok: false; type: HandlerErrorType; message: string; abort?: undefined }
  | { ok: false; type: "Cancelled" | "Timeout"; abort: GeodeError };

/**
 * Sends one handler its envelope (the payload as rewritten so far) and waits for the reply within
 * the handler's own timeout and the caller's deadline. A timeout, no responders or an error reply
 * is a handler error. The caller's cancellation or deadline, once the handler runs, ends the
 * invocation (`abort`, the running handler audited with only the error type); before it, the
 * call throws that error at once.
 */
export async function callHandler(
  nc: BusConnection,
  input: ChainInput,
  view: ChainView,
  h: RegisteredHandler,
): Promise<CallResult> {
  const reg = h.registration;
  if (input.signal?.aborted) throw cancelled(input.hook);
  const remaining = input.deadline === undefined ? Number.POSITIVE_INFINITY : input.deadline - Date.now();
  if (remaining <= 0) throw deadlinePassed(input.hook);
  const own = reg.timeout_ms === 0 ? Number.POSITIVE_INFINITY : reg.timeout_ms;
  const envelope = hookEnvelope(input.hook, input.correlation, view.payload, reg.schema_version);
  try {
    const guarded = view.guarded && encodeGuardedArguments(view.guarded.arguments);
    const reply = await requestJson(nc, h.subject, envelope, {
      timeoutMs: Math.min(own, remaining),
      signal: input.signal,
      reply: HookHandlerLeg.reply,
      ...(guarded === undefined ? {} : { headers: guardedHeader(guarded) }),
    });
    return { ok: true, decision: reply.decision, auditReason: reply.audit_reason };
  } catch (err) {
    // The caller cancelled while this handler ran: stop here.
    if (input.signal?.aborted) return { ok: false, type: "Cancelled", abort: cancelled(input.hook) };
    if (err instanceof RequestFailedError && err.failure === "timeout") {
      if (remaining >= own)
        return { ok: false, type: "Timeout", message: `timed out after ${reg.timeout_ms} ms` };
      return { ok: false, type: "Timeout", abort: deadlinePassed(input.hook) };
    }
    if (err instanceof RequestFailedError && err.failure === "no_responders")
      return { ok: false, type: "NoResponders", message: "no responders" };
    return callError(err);
  }
}

/** The header that hands a handler the call's guarded argument fields. */
function guardedHeader(value: string) {
  const h = headers();
  h.set(GUARDED_ARGUMENTS_HEADER, value);
  return h;
}

/**
 * An error reply, or a reply that is not a decision, as the audit records it: a refused or
 * malformed decision is `InvalidDecision`, anything else `HandlerError`, with its message bounded.
 */
function callError(err: unknown): CallResult {
  const message = err instanceof Error && err.message !== "" ? err.message : "error reply";
  const type: HandlerErrorType =
    isInvalidDecision(err) || isMalformedReply(err) ? "InvalidDecision" : "HandlerError";
  return { ok: false, type, message: sanitizeText(message, ERROR_MESSAGE_CHARS) };
}

function cancelled(hook: HookName): GeodeError {
  return new GeodeError(ErrorCode.Timeout, "hook invocation cancelled by the caller", {
    details: { hook, cancelled: true },
  });
}

function deadlinePassed(hook: HookName): GeodeError {
  return new GeodeError(ErrorCode.Timeout, "hook invocation exceeded the caller's deadline", {
    details: { hook },
  });
}
