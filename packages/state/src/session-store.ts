import type { GeodeConnection } from "@geode/bus";
import {
  type Correlation,
  ErrorCode,
  GeodeError,
  type Names,
  type SessionRecord,
  SessionRecordSchema,
  type SessionStatus,
  sanitizeText,
} from "@geode/contracts";
import { KvRecords } from "./kv-records.js";
import { KeepRecord, type MutateResult } from "./mutate-kv-record.js";

/** At most this many characters of a session's reason, model and provider are kept. */
const SESSION_TEXT_CHARS = 1_024;

/** A session's free text (a SessionEnd reason, a model name: the agent's words) with secrets masked. */
function cleanSession(record: SessionRecord): SessionRecord {
  return {
    ...record,
    reason: sanitizeText(record.reason, SESSION_TEXT_CHARS),
    model: sanitizeText(record.model, SESSION_TEXT_CHARS),
    provider: sanitizeText(record.provider, SESSION_TEXT_CHARS),
  };
}

/** Terminal session states. */
export const TERMINAL_STATUSES: ReadonlySet<SessionStatus> = new Set(["completed", "error"]);

/** Session status reason while a candidate waits for its external owner (the verifier's delivery gate). */
export const PAUSE_REASON = "external_verification_required";

export interface SessionOpening {
  session_id: string;
  model: string;
  provider: string;
  /** Resume an existing session (generation + 1); without it an existing session is refused. */
  resume?: boolean;
}

/**
 * The durable session records, KV `{ns}_sessions`, key = the session id as a key token.
 *
 * Owners: the runtime (through `@geode/runtime`'s sessions and sub-agents, or the agent gateway for
 * the agents it fronts) creates, resumes and ends sessions; the verifier writes only its delivery
 * gate, `pause` and `unpause` (docs/protocol.md, "KV buckets"). Every write is revision-checked.
 */
export class SessionStore {
  private constructor(
    private readonly records: KvRecords<SessionRecord>,
    private readonly names: Names,
  ) {}

  static async open(conn: GeodeConnection): Promise<SessionStore> {
    const records = await KvRecords.open(conn, "sessions", {
      parse: (raw) => SessionRecordSchema.parse(raw),
      clean: cleanSession,
    });
    return new SessionStore(records, conn.names);
  }

  private key(sessionId: string): string {
    return this.names.sessionKey(sessionId);
  }

  get(sessionId: string): Promise<SessionRecord | null> {
    return this.records.get(this.key(sessionId));
  }

  /** Revision-checked update of one session record (see `mutateKvRecord`). */
  mutate(
    sessionId: string,
    update: (current: SessionRecord | null) => SessionRecord,
  ): Promise<MutateResult<SessionRecord>> {
    return this.records.mutate(this.key(sessionId), update);
  }

  /**
   * Creates the session (generation 0), or with `resume` bumps the generation of an existing one,
   * keeping a `paused` status (a parked verification stays parked). An existing session without
   * `resume` is `invalid_request`.
   */
  async start(request: SessionOpening): Promise<{ record: SessionRecord; resumed: boolean }> {
    let resumed = false;
    const { value } = await this.mutate(request.session_id, (current) => {
      const now = Date.now();
      resumed = current !== null;
      if (current === null)
        return {
          status: "active",
          reason: "",
          generation: 0,
          model: request.model,
          provider: request.provider,
          updated_at: now,
        };
      if (!request.resume)
        throw new GeodeError(ErrorCode.InvalidRequest, `session ${request.session_id} already exists`);
      return {
        status: current.status === "paused" ? "paused" : "active",
        reason: current.status === "paused" ? current.reason : "",
        generation: current.generation + 1,
        model: request.model,
        provider: request.provider,
        updated_at: now,
      };
    });
    return { record: value as SessionRecord, resumed };
  }

  /**
   * Creates a new session that must not exist yet (a sub-agent's child, or a probe session of an
   * agent); an existing one is `invalid_request`.
   */
  async create(
    sessionId: string,
    fields: Pick<SessionRecord, "reason" | "model" | "provider"> &
      Partial<Pick<SessionRecord, "agent" | "agent_kind">>,
  ): Promise<SessionRecord> {
    const { value } = await this.mutate(sessionId, (current) => {
      if (current !== null)
        throw new GeodeError(ErrorCode.InvalidRequest, `session ${sessionId} already exists`);
      return { status: "active", generation: 0, ...fields, updated_at: Date.now() };
    });
    return value as SessionRecord;
  }

  /** Removes a session's record and its history (a probe session that stood for nothing real). */
  async purge(sessionId: string): Promise<void> {
    await this.records.purge(this.key(sessionId));
  }

  /**
   * Makes a terminal state durable. `ended` is true only for the one call whose revision-checked
   * update won; an already ended session is left as it is. An unknown session is `invalid_request`
   * unless `ifExists` (then nothing happens).
   */
  async end(
    sessionId: string,
    status: "completed" | "error",
    reason: string,
    options: { ifExists?: boolean } = {},
  ): Promise<{ ended: boolean; record: SessionRecord | null }> {
    const result = await this.mutate(sessionId, (current) => {
      if (current === null) {
        if (options.ifExists) throw new KeepRecord();
        throw new GeodeError(ErrorCode.InvalidRequest, `unknown session ${sessionId}`);
      }
      if (TERMINAL_STATUSES.has(current.status)) throw new KeepRecord();
      return { ...current, status, reason, updated_at: Date.now() };
    });
    return { ended: result.written, record: result.value };
  }

  /**
   * The verifier's delivery gate: pauses the session for its external owner, creating the record if
   * absent; an ended session is never revived.
   */
  pause(
    correlation: Pick<Correlation, "session_id" | "session_generation">,
  ): Promise<MutateResult<SessionRecord>> {
    return this.mutate(correlation.session_id, (current) => {
      const now = Date.now();
      if (!current)
        return {
          status: "paused",
          reason: PAUSE_REASON,
          generation: correlation.session_generation,
          model: "",
          provider: "",
          updated_at: now,
        };
      if (TERMINAL_STATUSES.has(current.status)) throw new KeepRecord();
      return { ...current, status: "paused", reason: PAUSE_REASON, updated_at: now };
    });
  }

  /** Lifts the verifier's pause (and only that one) once the owner resolved the parked candidate. */
  unpause(sessionId: string): Promise<MutateResult<SessionRecord>> {
    return this.mutate(sessionId, (current) => {
      if (current?.status !== "paused" || current.reason !== PAUSE_REASON) throw new KeepRecord();
      return { ...current, status: "active", reason: "", updated_at: Date.now() };
    });
  }
}
