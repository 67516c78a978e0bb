import { sha256 } from "@geode/contracts";
import { type AuditTarget, audit } from "./audit.js";
import { errorType, MiddlewareError, MiddlewareErrorCode } from "./errors.js";
import { type DeepReadonly, snapshot } from "./snapshot.js";
import { withTimeLimit } from "./time-limit.js";
import type { ExecutionMiddleware, MiddlewareContext, Next, Registration } from "./types.js";

/** The innermost call: the approved tool terminal or the LLM adapter. */
export type Terminal<Req, Res> = (request: DeepReadonly<Req>, context: MiddlewareContext) => Promise<Res>;

export interface ComposeOptions {
  target: AuditTarget;
  signal: AbortSignal;
  /** What is wrong with a wrapper's result shape, or null. */
  shapeProblem: (value: unknown) => string | null;
}

/**
 * Composes execution wrappers into one async onion around `terminal` (the first registration is the
 * outermost layer). Each layer gets a single-use `next`:
 * - a second call throws (`next_called_twice`);
 * - calling it with a changed request throws (`request_changed`: transforms belong to the request
 *   join point);
 * - not calling it is an explicit short-circuit (the terminal is not reached);
 * - errors and aborts from downstream pass through untouched (same object);
 * - if a layer throws (or times out, or returns a bad shape) after its `next` completed, the
 *   completed result is returned, so no side effect is replayed and no provider billed twice.
 */
export function compose<Req, Res>(
  layers: readonly Registration<ExecutionMiddleware<Req, Res>>[],
  terminal: Terminal<Req, Res>,
  options: ComposeOptions,
): (request: Req | DeepReadonly<Req>) => Promise<Res> {
  const { target } = options;
  const context: MiddlewareContext = {
    correlation: target.correlation,
    signal: options.signal,
    joinPoint: target.joinPoint,
  };

  const dispatch = async (i: number, request: DeepReadonly<Req>, hash: string): Promise<Res> => {
    const layer = layers[i];
    if (!layer) return terminal(request, context);
    const ctx = { middleware: layer.name, joinPoint: target.joinPoint };
    const startedAt = performance.now();
    let called = false;
    let completed: { value: Res } | undefined;
    const next: Next<Req, Res> = async (passed) => {
      if (called)
        throw new MiddlewareError(
          MiddlewareErrorCode.NextCalledTwice,
          `${target.joinPoint} middleware "${layer.name}" called next() twice; it may be called once`,
          ctx,
        );
      called = true;
      if (passed !== undefined && passed !== request && sha256(passed) !== hash)
        throw new MiddlewareError(
          MiddlewareErrorCode.RequestChanged,
          `${target.joinPoint} middleware "${layer.name}" changed the request; use the request join point for transforms`,
          ctx,
        );
      const value = await dispatch(i + 1, request, hash);
      completed = { value };
      return value;
    };
    try {
      const out = await withTimeLimit(() => layer.fn(request, next, context), {
        ms: layer.timeoutMs,
        ...ctx,
        signal: options.signal,
      });
      const problem = options.shapeProblem(out);
      if (problem !== null)
        throw new MiddlewareError(
          MiddlewareErrorCode.InvalidResult,
          `${target.joinPoint} middleware "${layer.name}" returned the wrong shape: ${problem}`,
          ctx,
        );
      audit(target, layer.name, called ? "called_next" : "short_circuit", "", startedAt, hash, hash);
      return out;
    } catch (err) {
      audit(target, layer.name, "error", errorType(err), startedAt, hash, hash);
      // A completed downstream result wins over a wrapper failing afterwards.
      if (completed) return completed.value;
      throw err;
    }
  };

  return (request) => {
    const frozen = snapshot(request) as DeepReadonly<Req>;
    return dispatch(0, frozen, sha256(frozen));
  };
}
