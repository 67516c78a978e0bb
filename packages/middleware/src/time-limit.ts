import { MiddlewareError, MiddlewareErrorCode } from "./errors.js";

/**
 * Races `work` against a time limit (0 = none) and the caller's signal. The abort rejects with the
 * signal's own reason, so cancellation keeps its identity.
 */
export function withTimeLimit<T>(
  work: () => Promise<T> | T,
  limit: { ms: number; middleware: string; joinPoint: string; signal: AbortSignal },
): Promise<T> {
  const { signal } = limit;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    let timer: NodeJS.Timeout | undefined;
    const onAbort = () => finish(() => reject(signal.reason));
    const finish = (settle: () => void) => {
      if (timer) clearTimeout(timer);
      signal.removeEventListener("abort", onAbort);
      settle();
    };
    if (limit.ms > 0) {
      timer = setTimeout(
        () =>
          finish(() =>
            reject(
              new MiddlewareError(
                MiddlewareErrorCode.Timeout,
                `${limit.joinPoint} middleware "${limit.middleware}" timed out after ${limit.ms} ms`,
                { middleware: limit.middleware, joinPoint: limit.joinPoint },
              ),
            ),
          ),
        limit.ms,
      );
    }
    signal.addEventListener("abort", onAbort, { once: true });
    Promise.resolve()
      .then(work)
      .then(
        (v) => finish(() => resolve(v)),
        (e: unknown) => finish(() => reject(e)),
      );
  });
}
