import type { BusConnection, Logger, RuntimeEventBus } from "@geode/bus";
import {
  type Correlation,
  type DispatchOutcome,
  ErrorCode,
  GeodeError,
  type GuardedArguments,
  type HookName,
  type HookPayloadInput,
  type Names,
  operationKeyOf,
  type ResultRef,
  registeredMcpOrigin,
  TOOL_NAME_PATTERN,
  type ToolCallStatus,
  type ToolDefinition,
  ToolExecuteLeg,
  type ToolExecuteReply,
  type ToolResultOffloaded,
  toolRefusedPayload,
} from "@geode/contracts";
import type { MiddlewareRegistry, ToolCallResult } from "@geode/middleware";
import type { ServiceObserver } from "@geode/service";
import type { ReceiptStore, ResultStore } from "@geode/state";
import type { ReceiptLease } from "../receipt-lease.js";
import type { SchemaValidator } from "../schema-validator.js";
import type { ToolExecutorConfig } from "../tool-executor-config.js";
import type { ToolPolicy } from "../tool-policy.js";
import type { ResolvedTool, ToolRegistry } from "../tool-registry.js";

/** Invokes one public hook through the hook-dispatcher. */
export type InvokeHook = <H extends HookName>(
  hook: H,
  payload: HookPayloadInput<H>,
  correlation: Correlation,
  options: { timeoutMs: number; guarded?: GuardedArguments | undefined },
) => Promise<DispatchOutcome>;

/** What the boundary's stages use, shared by every call of one executor. */
export interface BoundaryDeps {
  /** The connection, with the service's interceptors: the terminal and approval calls go out on it. */
  nc: BusConnection;
  names: Names;
  log: Logger;
  /** Each stage's span, the approvals pending (a service's `ServiceContext.observer`). */
  observer: ServiceObserver;
  events: RuntimeEventBus;
  invokeHook: InvokeHook;
  tools: ToolRegistry;
  policy: ToolPolicy;
  validator: SchemaValidator;
  receipts: ReceiptStore;
  /** Large results of `{ns}_results`: read back from providers, written for callers. */
  results: ResultStore;
  middleware: MiddlewareRegistry;
  config: ToolExecutorConfig;
}

type ParsedRequest = ReturnType<typeof ToolExecuteLeg.request.decode>;

/**
 * One tool call as it moves through the boundary's stages: the request, and what each stage
 * found (the tool, its arguments as rewritten, the receipt it holds, the terminal's result).
 */
export class ToolCall {
  readonly correlation: Correlation;
  readonly log: Logger;
  /** Budget of each hook invocation: the caller's `timeout_ms`, at most the executor's own. */
  readonly hookTimeoutMs: number;
  /** The arguments as they will run (after tool_request and PreToolUse rewrites). */
  args: Record<string, unknown>;
  /** PreToolUse's outcome (its `request_permission` leads to PermissionRequest). */
  preToolUse: DispatchOutcome | undefined;
  /** The lease on this call's admission receipt; null for a read tool or once let go. */
  lease: ReceiptLease | null = null;
  /** The terminal dispatch was entered (`executed`). */
  entered = false;
  /** The reference the terminal's result came by, reused for the reply if the result is unchanged. */
  terminalRef: ResultRef | null = null;
  /** What the reply will say after PostToolUse. */
  status: ToolCallStatus = "completed";
  reason = "";
  readonly additionalContext: string[] = [];
  private resolved: ResolvedTool | undefined;
  private finished: ToolCallResult | undefined;

  constructor(
    readonly deps: BoundaryDeps,
    readonly request: ParsedRequest,
  ) {
    this.correlation = request.correlation;
    this.hookTimeoutMs = Math.min(request.timeout_ms ?? deps.config.hookTimeoutMs, deps.config.hookTimeoutMs);
    this.log = deps.log.child({
      session_id: this.correlation.session_id,
      tool_call_id: this.correlation.tool_call_id,
    });
    this.args = request.arguments;
  }

  /** The tool as last resolved (after tool_request, again after a PreToolUse rewrite). */
  get tool(): ResolvedTool {
    if (!this.resolved) throw new Error("the tool of this call is not resolved yet");
    return this.resolved;
  }

  /** The name of the tool once resolved (a registered tool), else undefined. */
  get resolvedName(): string | undefined {
    return this.resolved?.definition.name;
  }

  set tool(tool: ResolvedTool) {
    this.resolved = tool;
  }

  /** The terminal's (or a short-circuiting wrapper's) result. */
  get result(): ToolCallResult {
    if (!this.finished) throw new Error("the terminal of this call has not answered yet");
    return this.finished;
  }

  set result(result: ToolCallResult) {
    this.finished = result;
  }

  get definition(): ToolDefinition {
    return this.tool.definition;
  }

  /** Mutation, communication and admin tools need an admission receipt. */
  get effectful(): boolean {
    return isEffectful(this.definition);
  }

  /** A hook before the effect: the dispatcher being unreachable fails the call closed. */
  async invokeBeforeEffect<H extends HookName>(
    hook: H,
    payload: HookPayloadInput<H>,
    guarded?: GuardedArguments,
  ): Promise<DispatchOutcome> {
    try {
      return await this.deps.invokeHook(hook, payload, this.correlation, {
        timeoutMs: this.hookTimeoutMs,
        guarded,
      });
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
}

/** Parses a `{ns}.tool.execute` body; bad input is refused before any stage runs. */
export function openToolCall(deps: BoundaryDeps, body: unknown): ToolCall {
  const request = ToolExecuteLeg.request.decode(body);
  if (!TOOL_NAME_PATTERN.test(request.tool_name))
    throw new GeodeError(ErrorCode.InvalidRequest, "tool_name must match [A-Za-z0-9_.-]{1,64}");
  return new ToolCall(deps, request);
}

const EFFECTFUL: ReadonlySet<string> = new Set(["mutation", "communication", "admin"]);

export function isEffectful(definition: ToolDefinition): boolean {
  return EFFECTFUL.has(definition.effect);
}

/** The logical operation of an effectful call (`operationKeyOf`); one without any is `invalid_request`. */
export function requireOperationKey(operationKey: string | undefined, corr: Correlation): string {
  const key = operationKeyOf({ operation_key: operationKey, correlation: corr });
  if (key === null)
    throw new GeodeError(
      ErrorCode.InvalidRequest,
      "an effectful tool call needs operation_key, or correlation.session_id and correlation.tool_call_id",
    );
  return key;
}

/** The reply of `{ns}.tool.execute`, every field present. */
export function toolReply(
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

export const errorResult = (message: string): ToolCallResult => ({
  result: { error: message },
  has_error: true,
});

/** The `tool.completed` timeline record that closes every call that got past admission. */
export function completedTimeline(call: ToolCall, status: ToolCallStatus, hasError: boolean): void {
  void call.deps.events.timeline(
    "tool.completed",
    { tool_name: call.definition.name, status, has_error: hasError, executed: call.entered },
    call.correlation,
  );
}

/**
 * A call refused before it ran (PreToolUse blocked it; the policy, a PermissionRequest handler or
 * an approver denied it): its reply, and its only record naming the tool, a `tool.completed` (not
 * executed) with the reason, what the call would have acted on (`toolTarget`) and, for a resolved
 * tool the mcp-bridge registered, its upstream.
 */
export function refuse(
  call: ToolCall,
  status: "blocked" | "denied",
  reason: string,
  tool: { name: string; args: Record<string, unknown> } = { name: call.request.tool_name, args: call.args },
): ToolExecuteReply {
  const definition = call.resolvedName === tool.name ? call.definition : undefined;
  void call.deps.events.timeline(
    "tool.completed",
    toolRefusedPayload(
      "runtime",
      tool.name,
      tool.args,
      status,
      reason,
      definition && registeredMcpOrigin(definition),
    ),
    call.correlation,
  );
  return toolReply(status, { reason });
}

/** `tool_result_offloaded`: a result that travelled by reference on one leg. */
export function emitOffloaded(call: ToolCall, leg: ToolResultOffloaded["leg"], ref: ResultRef): void {
  const payload: ToolResultOffloaded = {
    tool_name: call.definition.name,
    leg,
    object: ref.$ref,
    bytes: ref.bytes,
    sha256: ref.sha256,
  };
  void call.deps.events.emit("tool_result_offloaded", { ...payload }, call.correlation);
}
