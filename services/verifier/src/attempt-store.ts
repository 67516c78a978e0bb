import { ensureBucket } from "@geode/bus";
import {
  BuiltInResultSchema,
  ErrorCode,
  EvidenceRefSchema,
  GeodeError,
  type Names,
  PolicyActionSchema,
  type Usage,
  UsageSchema,
} from "@geode/contracts";
import { KeepRecord, mutateKvRecord } from "@geode/sdk";
import type { KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { z } from "zod";

const AttemptSchema = z.strictObject({
  attempt: z.number().int().min(0),
  /** `running` while the finalize is in progress; `aborted` when it failed before deciding. */
  state: z.enum(["running", "decided", "aborted"]),
  rounds: z.number().int().min(0),
  tool_call_count: z.number().int().min(0),
  usage: UsageSchema,
  candidate_sha256: z.string(),
  policy_action: PolicyActionSchema.nullable(),
  built_in: BuiltInResultSchema.nullable(),
  started_at: z.number().int(),
  decided_at: z.number().int().nullable(),
});
export type AttemptEntry = z.infer<typeof AttemptSchema>;

const TotalsSchema = z.strictObject({
  rounds: z.number().int(),
  tool_call_count: z.number().int(),
  usage: UsageSchema,
});
export type Totals = z.infer<typeof TotalsSchema>;

/** The checkpoint of a root turn's final result (accepted, or parked for its owner). */
const FinalSchema = z.strictObject({
  attempt: z.number().int(),
  policy_action: PolicyActionSchema,
  candidate_sha256: z.string(),
  totals: TotalsSchema,
  evidence_refs: z.array(EvidenceRefSchema),
  decided_at: z.number().int(),
  resolved_by: z.enum(["verifier", "owner"]),
});

/**
 * A root turn's verification state, KV `{ns}_verify`, key `{session_id}.{turn_id}`. The parked
 * candidate text lives here (and only here) until its owner resolves it.
 */
export const TurnRecordSchema = z.strictObject({
  session_id: z.string(),
  turn_id: z.string(),
  status: z.enum(["open", "parked", "delivered"]),
  attempts: z.array(AttemptSchema),
  pending: z
    .strictObject({
      attempt: z.number().int(),
      text: z.string(),
      candidate_sha256: z.string(),
      policy_action: PolicyActionSchema,
    })
    .nullable(),
  final: FinalSchema.nullable(),
  updated_at: z.number().int(),
});
export type TurnRecord = z.infer<typeof TurnRecordSchema>;

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

const parse = (raw: unknown) => TurnRecordSchema.parse(raw);

/** Sums rounds, tool calls and usage over the attempts that were not aborted. */
export function totalsOf(record: TurnRecord): Totals {
  const t: Totals = { rounds: 0, tool_call_count: 0, usage: { input_tokens: 0, output_tokens: 0 } };
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
 * The verifier's own count of attempts per root turn. Every change is a revision-checked update,
 * so two replicas racing on one turn each get a distinct attempt number, and no caller can reset it.
 */
export class AttemptStore {
  private constructor(
    private readonly kv: KV,
    private readonly names: Names,
  ) {}

  static async open(nc: NatsConnection, names: Names): Promise<AttemptStore> {
    return new AttemptStore(await ensureBucket(nc, names, "verify"), names);
  }

  key(sessionId: string, turnId: string): string {
    return this.names.verifyKey(sessionId, turnId);
  }

  async get(sessionId: string, turnId: string): Promise<TurnRecord | null> {
    const entry = await this.kv.get(this.key(sessionId, turnId));
    return entry && entry.operation === "PUT" ? parse(entry.json()) : null;
  }

  /** Change a turn record with a revision-checked update (retried on conflict). */
  mutate(sessionId: string, turnId: string, update: (current: TurnRecord | null) => TurnRecord) {
    return mutateKvRecord(this.kv, this.key(sessionId, turnId), parse, update);
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
}
