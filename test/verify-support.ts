/** Shared pieces of the verification and session tests: reading a stream back, a candidate. */
import type { EventEnvelope, TimelineRecord } from "@geode/contracts";
import type { JetStreamManager } from "@nats-io/jetstream";

/** Every message of a stream, decoded, in order (small test streams only). */
export async function readStream<T = unknown>(
  jsm: JetStreamManager,
  stream: string,
): Promise<{ subject: string; raw: string; body: T }[]> {
  const info = await jsm.streams.info(stream);
  const out: { subject: string; raw: string; body: T }[] = [];
  for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
    const m = await jsm.streams.getMessage(stream, { seq }).catch(() => null);
    if (!m) continue;
    const raw = new TextDecoder().decode(m.data);
    out.push({ subject: m.subject, raw, body: JSON.parse(raw) as T });
  }
  return out;
}

export const timelineOf = async (jsm: JetStreamManager, stream: string) =>
  (await readStream<TimelineRecord>(jsm, stream)).map((m) => m.body);

export const eventsOf = async (jsm: JetStreamManager, stream: string) =>
  (await readStream<EventEnvelope>(jsm, stream)).map((m) => m.body);

export const candidate = (text: string, over: Record<string, unknown> = {}) => ({
  text,
  termination_reason: "natural",
  rounds: 1,
  tool_call_count: 0,
  ...over,
});

let turnSeq = 0;
/** A fresh root turn correlation (one session per call unless given). */
export function rootTurn(session = `s-${Date.now().toString(36)}-${turnSeq}`, turn = `turn-${turnSeq++}`) {
  return { session_id: session, turn_id: turn, run_id: "run-1", session_generation: 0 };
}
