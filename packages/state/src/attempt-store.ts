import type { GeodeConnection } from "@geode/bus";
import {
  ErrorCode,
  GeodeError,
  maskSecretsDeep,
  type Names,
  type TurnRecord,
  TurnRecordSchema,
  type Usage,
  type VerifyTotals,
} from "@geode/contracts";
import { KvRecords } from "./kv-records.js";
import { KeepRecord, type MutateResult } from "./mutate-kv-record.js";

/** The record of a root turn before its first attempt. */
export function newTurnRecord(sessionId: string, turnId: string, now: number): TurnRecord {
  return {
    session_id: sessionId,
    turn_id: turnId,
    status: "open",
    attempts: [],
    pending: null,
    final: null,
    updated_at: now,
  };
}

/** Sums rounds, tool calls and usage over the attempts that were not aborted. */
export function totalsOf(record: TurnRecord): VerifyTotals {
  const t: VerifyTotals = { rounds: 0, tool_call_count: 0, usage: { input_tokens: 0, output_tokens: 0 } };
  for (const a of record.attempts) {
    if (a.state === "aborted") continue;
    t.rounds += a.rounds;
    t.tool_call_count += a.tool_call_count;
    t.usage.input_tokens += a.usage.input_tokens;
    t.usage.output_tokens += a.usage.output_tokens;
  }
  return t;
}

export interface AttemptFacts {
  rounds: number;
  tool_call_count: number;
  usage: Usage;
  candidate_sha256: string;
}

/**
 * The verifier's own count of attempts per root turn, KV `{ns}_verify`, key
 * `{session_id}.{turn_id}`. Owner: the verifier, and only it (it also clears a session's records
 * when the session ends). Every change is a revision-checked update, so two replicas racing on one
 * turn each get a distinct attempt number, and no caller can reset it.
 */
export class AttemptStore {
  private constructor(
    private readonly records: KvRecords<TurnRecord>,
    private readonly names: Names,
  ) {}

  static async open(conn: GeodeConnection): Promise<AttemptStore> {
    const records = await KvRecords.open(conn, "verify", {
      parse: (raw) => TurnRecordSchema.parse(raw),
      // The parked candidate is the agent's answer, kept whole for its owner but with secrets masked.
      clean: (t) =>
        t.pending ? { ...t, pending: { ...t.pending, text: maskSecretsDeep(t.pending.text) } } : t,
    });
    return new AttemptStore(records, conn.names);
  }

  key(sessionId: string, turnId: string): string {
    return this.names.verifyKey(sessionId, turnId);
  }

  get(sessionId: string, turnId: string): Promise<TurnRecord | null> {
    return this.records.get(this.key(sessionId, turnId));
  }

  /** Change a turn record with a revision-checked update (retried on conflict). */
  mutate(
    sessionId: string,
    turnId: string,
    update: (current: TurnRecord | null) => TurnRecord,
  ): Promise<MutateResult<TurnRecord>> {
    return this.records.mutate(this.key(sessionId, turnId), update);
  }

  /**
   * Takes the next attempt number of the root turn. A parked turn is refused with `session_paused`:
   * its candidate waits for the external owner, and a new finalize must not go around that gate.
   */
  async reserve(sessionId: string, turnId: string, facts: AttemptFacts): Promise<number> {
    let attempt = -1;
    await this.mutate(sessionId, turnId, (current) => {
      const now = Date.now();
      const base: TurnRecord = current ?? newTurnRecord(sessionId, turnId, now);
      if (base.status === "parked")
        throw new GeodeError(
          ErrorCode.SessionPaused,
          "this turn is parked for external verification; resolve it first",
          { details: { session_id: sessionId, turn_id: turnId } },
        );
      attempt = base.attempts.length;
      return {
        ...base,
        attempts: [
          ...base.attempts,
          {
            attempt,
            state: "running",
            ...facts,
            policy_action: null,
            built_in: null,
            started_at: now,
            decided_at: null,
          },
        ],
        updated_at: now,
      };
    });
    return attempt;
  }

  /**
   * Gives back an attempt whose finalize failed before deciding (hooks unreachable, …): removed when
   * it is still the last one, so an outage does not spend the revision budget; otherwise marked aborted.
   */
  async release(sessionId: string, turnId: string, attempt: number): Promise<void> {
    await this.mutate(sessionId, turnId, (current) => {
      if (!current) throw new KeepRecord();
      const last = current.attempts.at(-1);
      const attempts =
        last?.attempt === attempt && last.state === "running"
          ? current.attempts.slice(0, -1)
          : current.attempts.map((a) =>
              a.attempt === attempt && a.state === "running" ? { ...a, state: "aborted" as const } : a,
            );
      return { ...current, attempts, updated_at: Date.now() };
    });
  }

  /** Every root turn whose candidate waits for its external owner (`parked`), oldest first. */
  async parked(): Promise<TurnRecord[]> {
    const rows = (await this.records.list()).map((r) => r.value);
    return rows.filter((r) => r.status === "parked" && r.pending).sort((a, b) => a.updated_at - b.updated_at);
  }

  /** Deletes (with history) every root turn of one session; returns how many there were. */
  async clearSession(sessionId: string): Promise<number> {
    const keys = await this.records.keys(this.names.verifySessionFilter(sessionId));
    for (const key of keys) await this.records.purge(key);
    return keys.length;
  }
}
