import { randomUUID } from "node:crypto";
import { type Logger, RequestFailedError, type RuntimeEventBus, requestJson } from "@geode/bus";
import {
  type Correlation,
  type DispatchOutcome,
  ErrorCode,
  GeodeError,
  type HookName,
  type HookPayloadInput,
  type Names,
  parseOrThrow,
  type Receipt,
  type ReceiptRef,
  sha256,
  TOOL_NAME_PATTERN,
  type ToolCallStatus,
  type ToolDefinition,
  type ToolExecuteReply,
  ToolExecuteRequestSchema,
  ToolTerminalReplySchema,
} from "@geode/contracts";
import {
  type DeepReadonly,
  MiddlewareError,
  type MiddlewareRegistry,
  runToolExecution,
  runToolRequest,
  type ToolCallRequest,
  type ToolCallResult,
  thaw,
} from "@geode/middleware";
import type { NatsConnection } from "@nats-io/transport-node";
import { requestApproval } from "./approval-client.js";
import { type ReceiptStore, receiptRef } from "./receipt-store.js";
import type { SchemaValidator } from "./schema-validator.js";
import type { ToolExecutorConfig } from "./tool-executor-config.js";
import type { ToolPolicy } from "./tool-policy.js";
import type { ResolvedTool, ToolRegistry } from "./tool-registry.js";

/** Invokes one public hook through the hook-dispatcher. */
export type InvokeHook = <H extends HookName>(
  hook: H,
  payload: HookPayloadInput<H>,
  correlation: Correlation,
  options: { timeoutMs: number },
) => Promise<DispatchOutcome>;

export interface BoundaryDeps {
  nc: NatsConnection;
  names: Names;
  log: Logger;
  events: RuntimeEventBus;
  invokeHook: InvokeHook;
  tools: ToolRegistry;
  policy: ToolPolicy;
  validator: SchemaValidator;
  receipts: ReceiptStore;
  middleware: MiddlewareRegistry;
  config: ToolExecutorConfig;
}

const EFFECTFUL = new Set(["mutation", "communication", "admin"]);

/** Thrown by a terminal that ran out of time: its outcome is unknown. */
class TerminalTimeoutError extends Error {
  override readonly name = "TerminalTimeoutError";
}

function reply(
  status: ToolCallStatus,
  fields: Partial<Omit<ToolExecuteReply, "status">> = {},
): ToolExecuteReply {
  return {
    status,
    result: fields.result ?? {},
    has_error: fields.has_error ?? false,
    executed: fields.executed ?? false,
    additional_context: fields.additional_context ?? [],
    reason: fields.reason ?? "",
    receipt: fields.receipt ?? null,
  };
}

const errorResult = (message: string): ToolCallResult => ({ result: { error: message }, has_error: true });

function decisionReason(outcome: DispatchOutcome, actions: readonly string[], fallback: string): string {
  const d = outcome.decisions.find((x) => actions.includes(x.action));
  if (!d) return fallback;
  return d.reason ? `${d.handler}: ${d.reason}` : `${fallback} by ${d.handler}`;
}

/** A short, bounded description of a call for PermissionRequest and approvers. */
function describeCall(name: string, args: Record<string, unknown>): string {
  const text = `${name} ${JSON.stringify(args)}`;
  return text.length > 1024 ? `${text.slice(0, 1024)}…` : text;
}

/**
 * Runs one tool call through the boundary of DESIGN section 5:
 * original policy → tool_request → policy + schema validation → PreToolUse → policy + schema
 * revalidation → PermissionRequest / approval → pending-call checkpoint → effect admission →
 * tool_execution onion around the terminal (called once) → tool_exec_ended → PostToolUse →
 * receipt commit.
 */
export async function runToolCall(deps: BoundaryDeps, body: unknown): Promise<ToolExecuteReply> {
  const request = parseOrThrow(ToolExecuteRequestSchema, body, ErrorCode.InvalidRequest);
  if (!TOOL_NAME_PATTERN.test(request.tool_name))
    throw new GeodeError(ErrorCode.InvalidRequest, "tool_name must match [A-Za-z0-9_.-]{1,64}");
  const corr: Correlation = request.correlation;
  const hookTimeoutMs = Math.min(request.timeout_ms ?? deps.config.hookTimeoutMs, deps.config.hookTimeoutMs);
  const log = deps.log.child({ session_id: corr.session_id, tool_call_id: corr.tool_call_id });

  // 1. Original policy: a deny is final.
  const originalDenied = deps.policy(request.tool_name);
  if (originalDenied) return reply("denied", { reason: originalDenied });

  // 2. tool_request middleware.
  let call: DeepReadonly<ToolCallRequest>;
  try {
    call = await runToolRequest(
      deps.middleware,
      { tool_name: request.tool_name, arguments: request.arguments },
      { correlation: corr, events: deps.events },
    );
  } catch (err) {
    if (err instanceof MiddlewareError) return reply("failed", { has_error: true, reason: err.message });
    throw err;
  }

  // 3. Policy + schema validation of what the middleware produced.
  let checked = await admitShape(deps, call.tool_name, call.arguments, request.operation_key, corr);
  if ("denied" in checked) return checked.denied;
  let { tool } = checked;
  let args = thaw<Record<string, unknown>>(call.arguments);

  // 4. PreToolUse.
  const pre = await invokeBeforeEffect(
    deps,
    "PreToolUse",
    { tool_name: tool.definition.name, arguments: args },
    corr,
    hookTimeoutMs,
  );
  if (pre.blocked || pre.decisions.some((d) => d.action === "block"))
    return reply("blocked", { reason: decisionReason(pre, ["block"], "blocked") });
  if (pre.decisions.some((d) => d.action === "rewrite")) {
    // 5. A rewrite is checked again like the original: policy, then the tool's schema.
    const name = String(pre.payload["tool_name"]);
    const rewritten = restoreRedacted(pre.payload["arguments"] as Record<string, unknown>, args);
    checked = await admitShape(deps, name, rewritten, request.operation_key, corr, "PreToolUse rewrite");
    if ("denied" in checked) return checked.denied;
    tool = checked.tool;
    args = rewritten;
  }
  const definition = tool.definition;
  const effectful = EFFECTFUL.has(definition.effect);

  // 6. PermissionRequest, then a human when no handler decided.
  if (definition.requires_approval || pre.decisions.some((d) => d.action === "request_permission")) {
    const denied = await askPermission(deps, definition, args, corr, hookTimeoutMs);
    if (denied !== null) return reply("denied", { reason: denied });
  }

  // 7. Pending-call checkpoint (timeline) and effect admission (the durable receipt).
  const argumentsSha = sha256(args);
  void deps.events.timeline(
    "tool.called",
    { tool_name: definition.name, effect: definition.effect, arguments_sha256: argumentsSha },
    corr,
  );
  let admitted: { receipt: Receipt; revision: number } | null = null;
  if (effectful) {
    const key = operationKeyOf(request.operation_key, corr);
    const admission = await deps.receipts.admit(key, {
      tool_name: definition.name,
      arguments_sha256: argumentsSha,
      correlation: { ...corr },
    });
    if (!admission.admitted) return replayOrIndeterminate(admission.receipt, admission.revision);
    admitted = { receipt: admission.receipt, revision: admission.revision };
  }

  // 8. The tool_execution onion around the terminal, called once.
  let entered = false;
  let release = false;
  let result: ToolCallResult;
  const terminal = async (req: DeepReadonly<ToolCallRequest>): Promise<ToolCallResult> => {
    entered = true;
    const startedAt = performance.now();
    void deps.events.emit(
      "tool_exec_started",
      { tool_name: definition.name, effect: definition.effect },
      corr,
    );
    let out: ToolCallResult;
    try {
      const r = await callTerminal(deps, tool, thaw<Record<string, unknown>>(req.arguments), corr);
      out = r.result;
      release = r.released;
    } catch (err) {
      emitEnded(
        deps,
        definition,
        corr,
        startedAt,
        true,
        err instanceof TerminalTimeoutError ? "timeout" : "error",
      );
      throw err;
    }
    emitEnded(deps, definition, corr, startedAt, out.has_error, out.has_error ? "error_result" : "ok");
    return out;
  };
  try {
    result = await runToolExecution(
      deps.middleware,
      { tool_name: definition.name, arguments: args },
      terminal,
      {
        correlation: corr,
        events: deps.events,
      },
    );
  } catch (err) {
    if (err instanceof TerminalTimeoutError) {
      if (admitted) {
        // The effect may or may not have happened: keep the admission, never re-run it.
        completedTimeline(deps, definition, corr, "indeterminate", true, entered);
        return reply("indeterminate", {
          has_error: true,
          executed: true,
          result: { error: err.message },
          reason: `${err.message}; outcome unknown, receipt stays admitted`,
          receipt: receiptRef(admitted.receipt, admitted.revision),
        });
      }
      result = errorResult(err.message);
    } else {
      // A thrown terminal or a failing wrapper: no PostToolUse. An admission whose terminal was
      // never entered is released; one that was entered stays admitted (outcome unknown).
      const message = err instanceof Error ? err.message : String(err);
      // The error type only: a tool's message may quote its arguments.
      log.warn(
        { err_type: err instanceof Error ? err.name : typeof err, tool_name: definition.name },
        "tool call failed",
      );
      let ref: ReceiptRef | null = null;
      if (admitted) {
        if (entered) ref = receiptRef(admitted.receipt, admitted.revision);
        else await deps.receipts.release(admitted.receipt.key, admitted.revision);
      }
      completedTimeline(deps, definition, corr, "failed", true, entered);
      return reply("failed", {
        has_error: true,
        executed: entered,
        result: { error: message },
        reason: message,
        receipt: ref,
      });
    }
  }

  if (admitted && release) {
    // No responders: the effect certainly did not happen; free the key for a retry.
    await deps.receipts.release(admitted.receipt.key, admitted.revision);
    admitted = null;
  }

  // 9. PostToolUse (continue / add_context / block).
  let status: ToolCallStatus = result.has_error ? "failed" : "completed";
  let reason = "";
  const additional: string[] = [];
  try {
    const post = await deps.invokeHook(
      "PostToolUse",
      {
        tool_name: definition.name,
        arguments: args,
        result: result.result,
        has_error: result.has_error,
        executed: entered,
      },
      corr,
      { timeoutMs: hookTimeoutMs },
    );
    for (const d of post.decisions) if (d.action === "add_context" && d.reason) additional.push(d.reason);
    if (post.blocked || post.decisions.some((d) => d.action === "block")) {
      status = "blocked";
      reason = decisionReason(post, ["block"], "blocked");
    }
  } catch (err) {
    // The effect already happened: record that the post-hook could not run, and go on.
    log.warn({ err_type: err instanceof Error ? err.name : typeof err }, "PostToolUse could not run");
    reason = `PostToolUse not run: ${err instanceof Error ? err.message : String(err)}`;
  }

  // 10. Revision-checked receipt commit.
  let ref: ReceiptRef | null = null;
  if (admitted) {
    const final: Receipt = {
      ...admitted.receipt,
      state: "completed",
      completed_at: Date.now(),
      result: result.result,
      has_error: result.has_error,
      status,
      additional_context: additional,
    };
    try {
      const revision = await deps.receipts.commit(final, admitted.revision);
      ref = receiptRef(final, revision);
    } catch (err) {
      // Someone (an operator) changed the receipt meanwhile: report what is stored now.
      log.error({ err, receipt_key: final.key }, "receipt commit refused");
      const now = await deps.receipts.get(final.key).catch(() => null);
      ref = now ? receiptRef(now.receipt, now.revision) : null;
    }
  }
  completedTimeline(deps, definition, corr, status, result.has_error, entered);
  return reply(status, {
    result: result.result,
    has_error: result.has_error,
    executed: entered,
    additional_context: additional,
    reason,
    receipt: ref,
  });
}

/**
 * Handlers see arguments with secret-named keys removed (listed in `_redacted_fields`); a rewrite
 * built from what they saw would silently drop them. Put the caller's values back for keys the
 * rewrite did not set, and drop the marker the caller never sent.
 */
function restoreRedacted(
  rewritten: Record<string, unknown>,
  original: Record<string, unknown>,
): Record<string, unknown> {
  const redacted = rewritten["_redacted_fields"];
  if (!Array.isArray(redacted)) return rewritten;
  const out: Record<string, unknown> = { ...rewritten };
  if (!("_redacted_fields" in original)) delete out["_redacted_fields"];
  for (const key of redacted)
    if (typeof key === "string" && !(key in out) && key in original) out[key] = original[key];
  return out;
}

/** Policy, tool lookup, schema validation and the operation key of a (possibly rewritten) call. */
async function admitShape(
  deps: BoundaryDeps,
  name: string,
  args: unknown,
  operationKey: string | undefined,
  corr: Correlation,
  what = "arguments",
): Promise<{ tool: ResolvedTool } | { denied: ToolExecuteReply }> {
  const denied = deps.policy(name);
  if (denied) return { denied: reply("denied", { reason: denied }) };
  const tool = await deps.tools.resolve(name);
  if (!tool)
    throw new GeodeError(ErrorCode.UnknownTool, `unknown tool: ${name}`, { details: { tool_name: name } });
  const problem = deps.validator.problem(tool.definition.input_schema, args);
  if (problem !== null)
    throw new GeodeError(ErrorCode.SchemaInvalid, what === "arguments" ? problem : `${what}: ${problem}`, {
      details: { tool_name: name },
    });
  if (EFFECTFUL.has(tool.definition.effect)) operationKeyOf(operationKey, corr);
  return { tool };
}

/** The logical operation of an effectful call: `operation_key`, else `{session_id}.{tool_call_id}`. */
function operationKeyOf(operationKey: string | undefined, corr: Correlation): string {
  if (operationKey !== undefined) return operationKey;
  if (corr.session_id === "" || corr.tool_call_id === "")
    throw new GeodeError(
      ErrorCode.InvalidRequest,
      "an effectful tool call needs operation_key, or correlation.session_id and correlation.tool_call_id",
    );
  return `${corr.session_id}.${corr.tool_call_id}`;
}

function replayOrIndeterminate(receipt: Receipt, revision: number): ToolExecuteReply {
  const ref = receiptRef(receipt, revision);
  if (receipt.state === "admitted")
    return reply("indeterminate", {
      has_error: true,
      reason: `operation ${receipt.key} was admitted but never completed; its outcome is unknown (resolve it with 'geode receipts resolve')`,
      receipt: ref,
    });
  return reply("replayed", {
    result: receipt.result ?? {},
    has_error: receipt.has_error ?? receipt.state === "failed",
    additional_context: receipt.additional_context ?? [],
    reason: receipt.state === "failed" ? (receipt.resolution?.reason ?? "resolved as failed") : "",
    receipt: ref,
  });
}

/** A hook before the effect: the dispatcher being unreachable fails the call closed. */
async function invokeBeforeEffect<H extends HookName>(
  deps: BoundaryDeps,
  hook: H,
  payload: HookPayloadInput<H>,
  corr: Correlation,
  timeoutMs: number,
): Promise<DispatchOutcome> {
  try {
    return await deps.invokeHook(hook, payload, corr, { timeoutMs });
  } catch (err) {
    if (err instanceof GeodeError && (err.code === ErrorCode.Unavailable || err.code === ErrorCode.Timeout))
      throw new GeodeError(
        ErrorCode.Unavailable,
        `${hook} could not run (${err.message}); the tool call was not executed`,
        {
          cause: err,
        },
      );
    throw err;
  }
}

/** PermissionRequest, then a human; returns the deny reason, or null when allowed. */
async function askPermission(
  deps: BoundaryDeps,
  definition: ToolDefinition,
  args: Record<string, unknown>,
  corr: Correlation,
  hookTimeoutMs: number,
): Promise<string | null> {
  const detail = describeCall(definition.name, args);
  const outcome = await invokeBeforeEffect(
    deps,
    "PermissionRequest",
    { tool_name: definition.name, safety_level: definition.effect, detail },
    corr,
    hookTimeoutMs,
  );
  if (outcome.blocked || outcome.decisions.some((d) => d.action === "deny"))
    return decisionReason(outcome, ["deny"], "denied");
  const asked = outcome.decisions.some((d) => d.action === "ask");
  if (!asked && outcome.decisions.some((d) => d.action === "allow")) return null;
  // No decision, or ask: a human decides; nobody answering is a deny.
  const approvalId = randomUUID();
  void deps.events.emit(
    "tool_approval_requested",
    { approval_id: approvalId, tool_name: definition.name, safety_level: definition.effect },
    corr,
  );
  const answer = await requestApproval(
    deps.nc,
    deps.names,
    {
      approval_id: approvalId,
      tool_name: definition.name,
      safety_level: definition.effect,
      detail,
      correlation: corr,
    },
    deps.config.approvalTimeoutMs,
  );
  void deps.events.emit(
    "approval_transition",
    {
      approval_id: approvalId,
      tool_name: definition.name,
      decision: answer.decision,
      approver: answer.approver,
      source: answer.source,
    },
    corr,
  );
  if (answer.decision === "allow") return null;
  return `approval denied${answer.approver !== "none" ? ` by ${answer.approver}` : ""}: ${answer.reason ?? "no reason given"}`;
}

/** Calls the terminal with its time limit. `released`: the effect certainly did not happen. */
async function callTerminal(
  deps: BoundaryDeps,
  tool: ResolvedTool,
  args: Record<string, unknown>,
  corr: Correlation,
): Promise<{ result: ToolCallResult; released: boolean }> {
  const limit = tool.definition.timeout_ms ?? deps.config.toolTimeoutMs;
  if (tool.kind === "builtin") {
    const ac = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    try {
      const run = tool.tool.run(args, { signal: ac.signal });
      const result =
        limit > 0
          ? await Promise.race([
              run,
              new Promise<never>((_, reject) => {
                timer = setTimeout(() => {
                  ac.abort();
                  reject(new TerminalTimeoutError(`${tool.definition.name} timed out after ${limit} ms`));
                }, limit);
              }),
            ])
          : await run;
      return { result, released: false };
    } finally {
      if (timer) clearTimeout(timer);
    }
  }
  try {
    const body = await requestJson(
      deps.nc,
      deps.names.toolTerminal(tool.definition.name),
      { tool_name: tool.definition.name, arguments: args, correlation: corr },
      // 0 = no limit; NATS needs one, so a day stands for "none".
      { timeoutMs: limit > 0 ? limit : 86_400_000 },
    );
    const parsed = ToolTerminalReplySchema.safeParse(body);
    if (!parsed.success)
      return { result: errorResult("malformed reply from the tool terminal"), released: false };
    return { result: { result: parsed.data.result, has_error: parsed.data.has_error }, released: false };
  } catch (err) {
    if (err instanceof RequestFailedError && err.failure === "no_responders")
      return { result: errorResult(`no responders for tool ${tool.definition.name}`), released: true };
    if (err instanceof RequestFailedError && err.failure === "timeout")
      throw new TerminalTimeoutError(`${tool.definition.name} timed out after ${limit} ms`);
    if (err instanceof GeodeError) return { result: errorResult(err.message), released: false };
    throw err;
  }
}

/** `tool_exec_ended`, plus `tool_exec_failed` (pointing at it) for an error. */
function emitEnded(
  deps: BoundaryDeps,
  definition: ToolDefinition,
  corr: Correlation,
  startedAt: number,
  hasError: boolean,
  outcome: string,
): void {
  const endedId = randomUUID();
  const payload = {
    tool_name: definition.name,
    effect: definition.effect,
    has_error: hasError,
    outcome,
    duration_ms: Math.round((performance.now() - startedAt) * 1000) / 1000,
  };
  void deps.events.emit("tool_exec_ended", payload, corr, { id: endedId });
  if (hasError) void deps.events.emit("tool_exec_failed", { ...payload, ended_event_id: endedId }, corr);
}

function completedTimeline(
  deps: BoundaryDeps,
  definition: ToolDefinition,
  corr: Correlation,
  status: ToolCallStatus,
  hasError: boolean,
  executed: boolean,
): void {
  void deps.events.timeline(
    "tool.completed",
    { tool_name: definition.name, status, has_error: hasError, executed },
    corr,
  );
}
