import { RequestFailedError } from "./request.js";

/**
 * How long a request to a queue-group service keeps trying while nobody listens. "No responders"
 * means nothing received the request, so sending it again is always safe; it is also what a caller
 * sees for a moment when the service restarts or reconnects to another node of a cluster. Longer
 * than that is an outage, and the caller gets its `unavailable` error.
 */
const NO_RESPONDERS_GRACE_MS = 3_000;

const FIRST_PAUSE_MS = 50;
const LONGEST_PAUSE_MS = 500;

/**
 * Runs `attempt` again while it fails with "no responders", pausing 50, 100, 200, 400, 500, … ms,
 * until `graceMs` or the caller's own deadline (`deadline`, epoch ms) passes or `signal` aborts;
 * then the last failure is thrown. Any other outcome returns or throws at once.
 */
export async function retryNoResponders<T>(
  attempt: (remainingMs: number) => Promise<T>,
  options: { deadline: number; graceMs?: number; signal?: AbortSignal | undefined },
): Promise<T> {
  const giveUpAt = Math.min(options.deadline, Date.now() + (options.graceMs ?? NO_RESPONDERS_GRACE_MS));
  for (let pause = FIRST_PAUSE_MS; ; pause = Math.min(pause * 2, LONGEST_PAUSE_MS)) {
    try {
      return await attempt(Math.max(1, options.deadline - Date.now()));
    } catch (err) {
      const absent = err instanceof RequestFailedError && err.failure === "no_responders";
      if (!absent || options.signal?.aborted || Date.now() + pause >= giveUpAt) throw err;
      await new Promise((r) => setTimeout(r, pause));
    }
  }
}
