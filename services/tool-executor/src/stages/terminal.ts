import { randomUUID } from "node:crypto";
import type { ToolExecuteReply } from "@geode/contracts";
import {
  type DeepReadonly,
  runToolExecution,
  type ToolCallRequest,
  type ToolCallResult,
  thaw,
} from "@geode/middleware";
import { receiptRef } from "@geode/state";
import { callTerminal, TerminalTimeoutError } from "./call-terminal.js";
import { completedTimeline, emitOffloaded, errorResult, type ToolCall, toolReply } from "./tool-call.js";

/**
 * The `tool_execution` onion around the terminal, called once. `tool_exec_started` is sent before
 * the terminal request and `tool_exec_ended` (+ `tool_exec_failed`) before anything that follows,
 * on the executor's one connection, so every observer sees them in step order. No responders
 * gives the admission back (the effect certainly did not happen); an effectful terminal that ran
 * out of time is `indeterminate`; a thrown terminal or wrapper fails the call without PostToolUse.
 */
export async function terminal(call: ToolCall): Promise<ToolExecuteReply | undefined> {
  const { deps } = call;
  let released = false;
  const run = async (req: DeepReadonly<ToolCallRequest>): Promise<ToolCallResult> => {
    call.entered = true;
    const startedAt = performance.now();
    void deps.events.emit(
      "tool_exec_started",
      { tool_name: call.definition.name, effect: call.definition.effect },
      call.correlation,
    );
    try {
      const out = await callTerminal(
        deps,
        call.tool,
        thaw<Record<string, unknown>>(req.arguments),
        call.correlation,
      );
      released = out.released;
      if (out.ref) {
        call.terminalRef = out.ref;
        emitOffloaded(call, "terminal", out.ref);
      }
      emitEnded(call, startedAt, out.result.has_error, out.result.has_error ? "error_result" : "ok");
      return out.result;
    } catch (err) {
      emitEnded(call, startedAt, true, err instanceof TerminalTimeoutError ? "timeout" : "error");
      throw err;
    }
  };
  try {
    call.result = await runToolExecution(
      deps.middleware,
      { tool_name: call.definition.name, arguments: call.args },
      run,
      { correlation: call.correlation, events: deps.events },
    );
  } catch (err) {
    return terminalFailed(call, err);
  }
  if (released) await releaseAdmission(call);
  return undefined;
}

/** `tool_exec_ended`, plus `tool_exec_failed` (pointing at it) for an error. */
function emitEnded(call: ToolCall, startedAt: number, hasError: boolean, outcome: string): void {
  const endedId = randomUUID();
  const payload = {
    tool_name: call.definition.name,
    effect: call.definition.effect,
    has_error: hasError,
    outcome,
    duration_ms: Math.round((performance.now() - startedAt) * 1000) / 1000,
  };
  void call.deps.events.emit("tool_exec_ended", payload, call.correlation, { id: endedId });
  if (hasError)
    void call.deps.events.emit("tool_exec_failed", { ...payload, ended_event_id: endedId }, call.correlation);
}

/** Gives back an admission whose effect certainly did not happen, so a retry may run it. */
async function releaseAdmission(call: ToolCall): Promise<void> {
  if (!call.lease) return;
  const held = await call.lease.stop();
  call.lease = null;
  await call.deps.receipts.release(held.receipt.key, held.revision);
}

async function terminalFailed(call: ToolCall, err: unknown): Promise<ToolExecuteReply | undefined> {
  if (err instanceof TerminalTimeoutError) {
    // A read tool that ran out of time is an error result, and PostToolUse still runs.
    if (!call.lease) {
      call.result = errorResult(err.message);
      return undefined;
    }
    // The effect may or may not have happened: keep the admission, never re-run it.
    const held = await call.lease.end();
    call.lease = null;
    completedTimeline(call, "indeterminate", true);
    return toolReply("indeterminate", {
      has_error: true,
      executed: true,
      result: { error: err.message },
      reason: `${err.message}; outcome unknown, receipt stays admitted`,
      receipt: receiptRef(held.receipt, held.revision),
    });
  }
  // A thrown terminal or a failing wrapper: no PostToolUse. An admission whose terminal was never
  // entered is given back; one that was entered stays admitted (outcome unknown).
  const message = err instanceof Error ? err.message : String(err);
  // The error type only: a tool's message may quote its arguments.
  call.log.warn(
    { err_type: err instanceof Error ? err.name : typeof err, tool_name: call.definition.name },
    "tool call failed",
  );
  let receipt = null;
  if (call.lease && call.entered) {
    const held = await call.lease.end();
    call.lease = null;
    receipt = receiptRef(held.receipt, held.revision);
  } else {
    await releaseAdmission(call);
  }
  completedTimeline(call, "failed", true);
  return toolReply("failed", {
    has_error: true,
    executed: call.entered,
    result: { error: message },
    reason: message,
    receipt,
  });
}
