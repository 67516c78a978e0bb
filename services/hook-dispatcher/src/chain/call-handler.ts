import { encodeJson, RequestFailedError, requestMsg } from "@geode/bus";
import {
  ErrorCode,
  GeodeError,
  type HookDecision,
  type HookName,
  SchemaVersion,
  sanitizeText,
  toCorrelationV1,
} from "@geode/contracts";
import type { RegisteredHandler } from "../handler-registry.js";
import type { ChainRun } from "./chain-run.js";

/**
 * Why a handler call failed, as recorded in the audit event (only the type, never content).
 * `LeaseExpired` is a closed handler whose registration outlived its heartbeat.
 */
export type HandlerErrorType =
  | "Timeout"
  | "NoResponders"
  | "HandlerError"
  | "InvalidDecision"
  | "InvalidRewrite"
  | "LeaseExpired"
  | "Cancelled";

/** Set by the SDK on an error reply for a decision it refused, so the audit names the cause. */
export const INVALID_DECISION_KIND = "invalid_decision";

/** Longest handler error message kept in `handler_errors`. */
const ERROR_MESSAGE_CHARS = 1024;
/** nats.js needs a finite timer; "no timeout" waits this long (about 24 days). */
const NO_TIMEOUT_MS = 2_147_483_647;

export type CallResult =
  | { ok: true; decision: HookDecision | null }
  | { ok: false; type: HandlerErrorType; message: string };

/**
 * Sends one handler its envelope and waits for the reply within the handler's own timeout and the
 * caller's deadline. The audits of the handlers before it go out first, in the same socket write.
 * A timeout, no responders or an error reply is a handler error; the caller's cancellation or
 * deadline stops the chain (the running handler audited as `error` with only the error type).
 */
export async function callHandler(
  run: ChainRun,
  h: RegisteredHandler,
  startedAt: number,
): Promise<CallResult> {
  const { input } = run;
  const reg = h.registration;
  if (input.signal?.aborted) throw cancelled(input.hook);
  const remaining = input.deadline === undefined ? Number.POSITIVE_INFINITY : input.deadline - Date.now();
  if (remaining <= 0) throw deadlinePassed(input.hook);
  const own = reg.timeout_ms === 0 ? Number.POSITIVE_INFINITY : reg.timeout_ms;
  const data = encodeJson(envelope(run, reg.schema_version));
  input.audits.publish();
  try {
    const msg = await requestMsg(run.ctx.nc, h.subject, data, {
      timeoutMs: Math.min(own, remaining, NO_TIMEOUT_MS),
      signal: input.signal,
    });
    return decodeReply(msg.data);
  } catch (err) {
    if (input.signal?.aborted) {
      // The caller cancelled while this handler ran: stop here, audit only the error type.
      run.audit(reg.name, "error", "Cancelled", startedAt);
      throw cancelled(input.hook);
    }
    if (err instanceof RequestFailedError && err.failure === "timeout") {
      if (remaining >= own)
        return { ok: false, type: "Timeout", message: `timed out after ${reg.timeout_ms} ms` };
      run.audit(reg.name, "error", "Timeout", startedAt);
      throw deadlinePassed(input.hook);
    }
    if (err instanceof RequestFailedError && err.failure === "no_responders")
      return { ok: false, type: "NoResponders", message: "no responders" };
    const message = err instanceof Error ? err.message : String(err);
    return { ok: false, type: "HandlerError", message: sanitizeText(message, ERROR_MESSAGE_CHARS) };
  }
}

/** What the handler receives, in the schema version it registered for. */
function envelope(run: ChainRun, version: string) {
  const { hook, correlation } = run.input;
  return version === SchemaVersion.V1
    ? {
        schema_version: SchemaVersion.V1,
        name: hook,
        correlation: toCorrelationV1(correlation),
        payload: run.payload,
      }
    : { schema_version: SchemaVersion.V2, name: hook, correlation, payload: run.payload };
}

const textDecoder = new TextDecoder();

function decodeReply(data: Uint8Array): CallResult {
  let body: unknown;
  try {
    body = JSON.parse(textDecoder.decode(data));
  } catch {
    return { ok: false, type: "InvalidDecision", message: "reply is not valid JSON" };
  }
  if (body === null || typeof body !== "object" || Array.isArray(body))
    return { ok: false, type: "InvalidDecision", message: "reply must be an object with a decision" };
  const reply = body as Record<string, unknown>;
  const error = reply["error"];
  if (error !== undefined && typeof error === "object" && error !== null && !("decision" in reply)) {
    const e = error as Record<string, unknown>;
    const message = typeof e["message"] === "string" && e["message"] !== "" ? e["message"] : "error reply";
    const details = e["details"] as Record<string, unknown> | undefined;
    const type: HandlerErrorType =
      details && details["kind"] === INVALID_DECISION_KIND ? "InvalidDecision" : "HandlerError";
    return { ok: false, type, message: sanitizeText(message, ERROR_MESSAGE_CHARS) };
  }
  if (!("decision" in reply))
    return { ok: false, type: "InvalidDecision", message: "reply must be an object with a decision" };
  return { ok: true, decision: reply["decision"] as HookDecision | null };
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
