import { encodeJson, type Logger, RequestFailedError, type RuntimeEventBus, requestMsg } from "@geode/bus";
import {
  type AttributedDecision,
  applyRewrite,
  type Correlation,
  closedFailureAction,
  type DispatchOutcome,
  ErrorCode,
  type ExtensionInvokedPayload,
  GeodeError,
  type HookDecision,
  type HookName,
  isStoppingAction,
  SchemaVersion,
  sanitizeText,
  toCorrelationV1,
  validateDecision,
} from "@geode/contracts";
import type { NatsConnection } from "@nats-io/transport-node";
import type { HandlerRegistry, RegisteredHandler } from "./handler-registry.js";

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

/** Longest `reason` an audit event carries. */
export const AUDIT_REASON_CHARS = 512;
/** Longest handler error message kept in `handler_errors`. */
const ERROR_MESSAGE_CHARS = 1024;
/** nats.js needs a finite timer; "no timeout" waits this long (about 24 days). */
const NO_TIMEOUT_MS = 2_147_483_647;

type CallResult =
  | { ok: true; decision: HookDecision | null }
  | { ok: false; type: HandlerErrorType; message: string };

export interface ChainContext {
  nc: NatsConnection;
  registry: HandlerRegistry;
  events: RuntimeEventBus;
  log: Logger;
}

export interface ChainInput {
  hook: HookName;
  correlation: Correlation;
  /** The sanitized, validated payload. */
  payload: Record<string, unknown>;
  /** Epoch ms after which the caller no longer waits; undefined = no caller deadline. */
  deadline: number | undefined;
  /** Set when the caller gave up; the chain stops before the next handler. */
  signal?: AbortSignal;
  /**
   * When given, audit events are collected here instead of being published at once, so the
   * caller can publish them after its reply (one socket write for both, the reply first).
   */
  audits?: ExtensionInvokedPayload[];
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

/** Runs the handler chain of one invocation and composes the outcome (DESIGN section 3). */
export async function runChain(ctx: ChainContext, input: ChainInput): Promise<DispatchOutcome> {
  const { hook, correlation } = input;
  let payload = input.payload;
  const decisions: AttributedDecision[] = [];
  const sources: string[] = [];
  const errors: string[] = [];
  let blocked = false;
  const correlationV1 = toCorrelationV1(correlation);

  const audit = (
    handler: string,
    status: ExtensionInvokedPayload["status"],
    reason: string,
    startedAt: number,
  ): void => {
    const event: ExtensionInvokedPayload = {
      surface: "hook",
      name: hook,
      extension: handler,
      status,
      reason,
      duration_ms: Math.round((performance.now() - startedAt) * 1000) / 1000,
    };
    // Never awaited on the hot path: the bus retries and logs; stop() flushes it.
    if (input.audits) input.audits.push(event);
    else void ctx.events.emit("extension_invoked", event, correlation);
  };

  const fail = (h: RegisteredHandler, type: HandlerErrorType, message: string, startedAt: number) => {
    const name = h.registration.name;
    errors.push(`${name}: ${message}`);
    audit(name, "error", type, startedAt);
    ctx.log.warn({ hook, handler: name, error_type: type, ...correlation }, "hook handler failed");
    if (h.registration.failure_mode === "closed") {
      const action = closedFailureAction(hook);
      decisions.push({ handler: name, action, reason: `failure_mode closed: ${message}` });
      sources.push(name);
      blocked = true;
    }
  };

  for (const h of ctx.registry.handlers(hook)) {
    const reg = h.registration;
    if (h.match) {
      const tool = payload["tool_name"];
      if (typeof tool !== "string" || !h.match(tool)) continue;
    }
    const startedAt = performance.now();
    if (reg.heartbeat_at + reg.lease_ms < Date.now()) {
      // An open handler past its lease is gone: skip it silently. A closed one is a guard that must
      // not be bypassed by crashing: it fails closed until its registration is deleted.
      if (reg.failure_mode === "closed") {
        fail(h, "LeaseExpired", "lease expired", startedAt);
        break;
      }
      continue;
    }
    if (input.signal?.aborted) throw cancelled(input);
    const remaining = input.deadline === undefined ? Number.POSITIVE_INFINITY : input.deadline - Date.now();
    if (remaining <= 0) throw deadlinePassed(input);
    const own = reg.timeout_ms === 0 ? Number.POSITIVE_INFINITY : reg.timeout_ms;
    const limitedByCaller = remaining < own;
    const waitMs = Math.min(own, remaining, NO_TIMEOUT_MS);

    const envelope =
      reg.schema_version === SchemaVersion.V1
        ? {
            schema_version: SchemaVersion.V1,
            name: hook,
            correlation: correlationV1,
            payload,
          }
        : { schema_version: SchemaVersion.V2, name: hook, correlation, payload };

    let result: CallResult;
    try {
      const msg = await requestMsg(ctx.nc, h.subject, encodeJson(envelope), {
        timeoutMs: waitMs,
        signal: input.signal,
      });
      result = decodeReply(msg.data);
    } catch (err) {
      if (input.signal?.aborted) {
        // The caller cancelled while this handler ran: stop here, audit only the error type.
        audit(reg.name, "error", "Cancelled", startedAt);
        throw cancelled(input);
      }
      if (err instanceof RequestFailedError && err.failure === "timeout") {
        if (limitedByCaller) {
          audit(reg.name, "error", "Timeout", startedAt);
          throw deadlinePassed(input);
        }
        result = { ok: false, type: "Timeout", message: `timed out after ${reg.timeout_ms} ms` };
      } else if (err instanceof RequestFailedError && err.failure === "no_responders") {
        result = { ok: false, type: "NoResponders", message: "no responders" };
      } else {
        result = {
          ok: false,
          type: "HandlerError",
          message: sanitizeText(err instanceof Error ? err.message : String(err), ERROR_MESSAGE_CHARS),
        };
      }
    }

    if (!result.ok) {
      fail(h, result.type, result.message, startedAt);
      if (blocked) break;
      continue;
    }
    const check = validateDecision(hook, result.decision);
    if (!check.ok) {
      fail(h, "InvalidDecision", check.error, startedAt);
      if (blocked) break;
      continue;
    }
    const decision = check.decision;
    if (decision === null) {
      audit(reg.name, "ok", "", startedAt);
      continue;
    }
    if (decision.action === "rewrite" && decision.updates) {
      const rewritten = applyRewrite(hook, payload, decision.updates);
      if (!rewritten.ok) {
        fail(h, "InvalidRewrite", `invalid rewrite: ${rewritten.error}`, startedAt);
        if (blocked) break;
        continue;
      }
      payload = rewritten.payload;
    }
    decisions.push({ handler: reg.name, ...decision });
    sources.push(reg.name);
    if (isStoppingAction(decision.action)) {
      audit(
        reg.name,
        decision.action as "block" | "deny",
        sanitizeText(decision.reason ?? "", AUDIT_REASON_CHARS),
        startedAt,
      );
      blocked = true;
      break;
    }
    audit(reg.name, "ok", "", startedAt);
  }

  return {
    schema_version: SchemaVersion.V2,
    name: hook,
    correlation,
    payload,
    decisions,
    decision_sources: sources,
    handler_errors: errors,
    blocked,
  };
}

function cancelled(input: ChainInput): GeodeError {
  return new GeodeError(ErrorCode.Timeout, "hook invocation cancelled by the caller", {
    details: { hook: input.hook, cancelled: true },
  });
}

function deadlinePassed(input: ChainInput): GeodeError {
  return new GeodeError(ErrorCode.Timeout, "hook invocation exceeded the caller's deadline", {
    details: { hook: input.hook },
  });
}
