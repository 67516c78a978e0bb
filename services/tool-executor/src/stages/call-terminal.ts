import { RequestFailedError, requestJson } from "@geode/bus";
import {
  type Correlation,
  ErrorCode,
  ErrorKind,
  GeodeError,
  isResultRef,
  type ResultRef,
  ToolTerminalLeg,
} from "@geode/contracts";
import type { ToolCallResult } from "@geode/middleware";
import type { ResolvedTool } from "../tool-registry.js";
import { type BoundaryDeps, errorResult } from "./tool-call.js";

/** Thrown by a terminal that ran out of time, or that says it lost the call: its outcome is unknown. */
export class TerminalTimeoutError extends Error {
  override readonly name = "TerminalTimeoutError";
}

/** nats.js needs a finite timer; a terminal without a time limit waits a day. */
const NO_LIMIT_MS = 86_400_000;

/**
 * Calls the terminal once with its time limit (the tool's `timeout_ms`, else the configured one):
 * a built-in in-process, a remote tool on `{ns}.tool.terminal.{tool}`. `released`: the effect
 * certainly did not happen (no responders, or the terminal's error reply of kind `not_started`), so
 * an admission may be given back. An error reply `indeterminate` (the terminal passed the call on
 * and lost it) counts as a timeout: the outcome is unknown. A result that came
 * by reference is read back (`ref`), checked to be this tool's own and to match its size and
 * sha256; a reference that is not is an error result (the effect did run).
 */
export async function callTerminal(
  deps: BoundaryDeps,
  tool: ResolvedTool,
  args: Record<string, unknown>,
  correlation: Correlation,
): Promise<{ result: ToolCallResult; released: boolean; ref?: ResultRef }> {
  const limit = tool.definition.timeout_ms ?? deps.config.toolTimeoutMs;
  const timedOut = () => new TerminalTimeoutError(`${tool.definition.name} timed out after ${limit} ms`);
  if (tool.kind === "builtin")
    return { result: await runBuiltin(tool, args, limit, timedOut), released: false };
  try {
    const body = await requestJson(
      deps.nc,
      deps.names.toolTerminal(tool.definition.name),
      ToolTerminalLeg.request.encode({ tool_name: tool.definition.name, arguments: args, correlation }),
      // A reply of the wrong shape throws malformedReply: an error result, below.
      { timeoutMs: limit > 0 ? limit : NO_LIMIT_MS, reply: ToolTerminalLeg.reply },
    );
    const { result, has_error } = body;
    if (!isResultRef(result)) return { result: { result, has_error }, released: false };
    return await readBack(deps, tool.definition.name, result, has_error);
  } catch (err) {
    if (err instanceof RequestFailedError && err.failure === "no_responders")
      return { result: errorResult(`no responders for tool ${tool.definition.name}`), released: true };
    if (err instanceof RequestFailedError && err.failure === "timeout") throw timedOut();
    if (err instanceof GeodeError && err.code === ErrorCode.Indeterminate)
      throw new TerminalTimeoutError(err.message);
    if (err instanceof GeodeError)
      return { result: errorResult(err.message), released: err.details["kind"] === ErrorKind.NotStarted };
    throw err;
  }
}

/** The result a provider's reference stands for, if it is that provider's and what it claims. */
async function readBack(
  deps: BoundaryDeps,
  toolName: string,
  ref: ResultRef,
  hasError: boolean,
): Promise<{ result: ToolCallResult; released: boolean; ref?: ResultRef }> {
  try {
    const result = await deps.results.get(ref, {
      writer: { tool: toolName },
      maxBytes: deps.config.resultMaxBytes,
    });
    return { result: { result, has_error: hasError }, released: false, ref };
  } catch (err) {
    // The effect ran; only its result is lost or refused.
    return {
      result: errorResult(`the result reference was refused: ${(err as Error).message}`),
      released: false,
    };
  }
}

async function runBuiltin(
  tool: Extract<ResolvedTool, { kind: "builtin" }>,
  args: Record<string, unknown>,
  limit: number,
  timedOut: () => TerminalTimeoutError,
): Promise<ToolCallResult> {
  const ac = new AbortController();
  const run = tool.tool.run(args, { signal: ac.signal });
  if (limit <= 0) return run;
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      run,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          ac.abort();
          reject(timedOut());
        }, limit);
      }),
    ]);
  } finally {
    if (timer) clearTimeout(timer);
  }
}
