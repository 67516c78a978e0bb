import { type GeodeConnection, requestJson } from "@geode/bus";
import {
  VerifyFinalizeLeg,
  type VerifyFinalizeRequest,
  type VerifyReply,
  VerifyResolveLeg,
  type VerifyResolveRequest,
} from "@geode/contracts";

/** Default wait for a verification: three hook chains may run inside it. */
export const DEFAULT_VERIFY_TIMEOUT_MS = 60_000;

export interface VerifyCallOptions {
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** Talks to the verifier service (`{ns}.verify.finalize`, `{ns}.verify.resolve`). */
export interface VerifyClient {
  /**
   * Verifies one candidate answer of a root turn (correlation `session_id` + `turn_id`). The reply's
   * `policy_action` says what to do: `accept` (deliver, `deliver: true`); `revise` / `continue`
   * (do not deliver; run another attempt with `follow_up_instruction`, see `followUpContext`);
   * `escalate`, `escalate_budget_exhausted`, `built_in_fail` (do not deliver: the session is
   * paused and the candidate is parked for its external owner as `pending_text`; wait for
   * `resolve`). Error replies are thrown as GeodeError (`invalid_request`, `session_paused`, …).
   */
  finalize(request: VerifyFinalizeRequest, options?: VerifyCallOptions): Promise<VerifyReply>;
  /**
   * The external owner's answer to a parked candidate: `deliver` (reply `accept`, `deliver: true`,
   * the parked text in `pending_text`; the session is active again) or `revise` with an
   * instruction (reply `revise` with it as `follow_up_instruction`). A turn that is not parked is
   * refused with `invalid_request`.
   */
  resolve(request: VerifyResolveRequest, options?: VerifyCallOptions): Promise<VerifyReply>;
}

export function createVerifyClient(conn: GeodeConnection): VerifyClient {
  const wait = (options: VerifyCallOptions = {}) => ({
    timeoutMs: options.timeoutMs ?? DEFAULT_VERIFY_TIMEOUT_MS,
    signal: options.signal,
  });
  return {
    finalize: (request, options) =>
      requestJson(conn, conn.names.verifyFinalize, VerifyFinalizeLeg.request.encode(request), {
        ...wait(options),
        reply: VerifyFinalizeLeg.reply,
      }),
    resolve: (request, options) =>
      requestJson(conn, conn.names.verifyResolve, VerifyResolveLeg.request.encode(request), {
        ...wait(options),
        reply: VerifyResolveLeg.reply,
      }),
  };
}

/** A message for the model's dynamic system context. */
export interface SystemContextMessage {
  role: "system";
  content: string;
}

/**
 * The follow-up instruction of a `revise` or `continue` reply as dynamic system context, or null.
 * Inject it once, into the next attempt's request only, as system context: never as a user
 * message, and never into the stored human transcript. Completed tool effects are not replayed.
 */
export function followUpContext(
  reply: Pick<VerifyReply, "follow_up_instruction">,
): SystemContextMessage | null {
  if (!reply.follow_up_instruction) return null;
  return { role: "system", content: `[verification follow-up]\n${reply.follow_up_instruction}` };
}
