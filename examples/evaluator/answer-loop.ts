/**
 * The runtime side of external verification: generate, finalize, and either deliver, revise with
 * the follow-up injected once as dynamic system context, or stop at the delivery gate.
 */
import {
  createVerifyClient,
  followUpContext,
  type GeodeConnection,
  type SystemContextMessage,
} from "@geode/runtime";

export type Generate = (systemContext: SystemContextMessage[]) => Promise<string>;

export interface LoopResult {
  /** The delivered answer, or null when the candidate was parked for its external owner. */
  delivered: string | null;
  attempts: number;
  policy_actions: string[];
}

export async function answerWithVerification(
  conn: GeodeConnection,
  root: { session_id: string; turn_id: string },
  generate: Generate,
): Promise<LoopResult> {
  const verify = createVerifyClient(conn);
  const actions: string[] = [];
  let context: SystemContextMessage[] = [];
  for (;;) {
    const text = await generate(context);
    const reply = await verify.finalize({
      correlation: root,
      candidate: { text, termination_reason: "natural", rounds: 1, tool_call_count: 0 },
    });
    actions.push(reply.policy_action);
    if (reply.deliver) return { delivered: text, attempts: actions.length, policy_actions: actions };
    const followUp = followUpContext(reply);
    // escalate / budget exhausted: the session is paused; the owner resolves it with verify.resolve
    if (!followUp) return { delivered: null, attempts: actions.length, policy_actions: actions };
    context = [followUp]; // injected once: the next attempt sees only the newest follow-up
  }
}
