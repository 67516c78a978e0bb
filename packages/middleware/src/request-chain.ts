import { sha256 } from "@geode/contracts";
import { type AuditTarget, audit } from "./audit.js";
import { errorType, MiddlewareError, MiddlewareErrorCode } from "./errors.js";
import { type DeepReadonly, isFrozenWriteError, snapshot } from "./snapshot.js";
import { withTimeLimit } from "./time-limit.js";
import type { MiddlewareContext, Registration, RequestMiddleware } from "./types.js";

export interface RequestChainOptions<Req> {
  target: AuditTarget;
  signal: AbortSignal;
  /** What is wrong with a result's shape, or null. */
  shapeProblem: (value: unknown) => string | null;
  /** Extra rule on one step (e.g. the LLM cache-prefix guard); throws a MiddlewareError. */
  checkStep?: (before: DeepReadonly<Req>, after: DeepReadonly<Req>, reg: Registration<unknown>) => void;
}

/**
 * Runs request transforms N → N+1: each sees an isolated, deep-frozen snapshot of the previous
 * result. Mutating it, returning the wrong shape, breaking a step rule or timing out is a
 * MiddlewareError (the chain stops; nothing is half-applied because every step is a new value).
 */
export async function runRequestChain<Req>(
  regs: readonly Registration<RequestMiddleware<Req>>[],
  initial: Req | DeepReadonly<Req>,
  options: RequestChainOptions<Req>,
): Promise<DeepReadonly<Req>> {
  const { target } = options;
  let current = snapshot(initial) as DeepReadonly<Req>;
  for (const reg of regs) {
    const startedAt = performance.now();
    const before = sha256(current);
    const context: MiddlewareContext = {
      correlation: target.correlation,
      signal: options.signal,
      joinPoint: target.joinPoint,
    };
    const ctx = { middleware: reg.name, joinPoint: target.joinPoint };
    try {
      let out: unknown;
      try {
        out = await withTimeLimit(() => reg.fn(current, context), {
          ms: reg.timeoutMs,
          ...ctx,
          signal: options.signal,
        });
      } catch (err) {
        if (isFrozenWriteError(err))
          throw new MiddlewareError(
            MiddlewareErrorCode.InputMutated,
            `${target.joinPoint} middleware "${reg.name}" mutated its input; return a new request instead`,
            { ...ctx, cause: err },
          );
        throw err;
      }
      if (sha256(current) !== before)
        throw new MiddlewareError(
          MiddlewareErrorCode.InputMutated,
          `${target.joinPoint} middleware "${reg.name}" mutated its input; return a new request instead`,
          ctx,
        );
      const problem = options.shapeProblem(out);
      if (problem !== null)
        throw new MiddlewareError(
          MiddlewareErrorCode.InvalidResult,
          `${target.joinPoint} middleware "${reg.name}" returned the wrong shape: ${problem}`,
          ctx,
        );
      const next = snapshot(out) as DeepReadonly<Req>;
      options.checkStep?.(current, next, reg);
      audit(target, reg.name, "ok", "", startedAt, before, sha256(next));
      current = next;
    } catch (err) {
      audit(target, reg.name, "error", errorType(err), startedAt, before, before);
      throw err;
    }
  }
  return current;
}
