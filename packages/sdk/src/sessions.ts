import { encodeJson, ensureBucket, isRevisionConflict, RuntimeEventBus } from "@geode/bus";
import {
  type Correlation,
  type CorrelationInput,
  type DispatchOutcome,
  ErrorCode,
  correlation as fillCorrelation,
  GeodeError,
  HookName,
  type HookPayloadInput,
  RuntimeEvent,
  type SessionRecord,
  SessionRecordSchema,
  type SessionStatus,
  toGeodeError,
} from "@geode/contracts";
import type { KV } from "@nats-io/kv";
import type { GeodeConnection } from "./connection.js";
import { createHookClient, type HookClient } from "./hook-client.js";

/** Thrown by a `mutateKvRecord` update function to leave the key as it is. */
export class KeepRecord extends Error {
  override readonly name = "KeepRecord";
}

const MAX_CAS_ATTEMPTS = 50;

function isLive(entry: { operation: string } | null): entry is { operation: "PUT" } {
  return entry !== null && entry.operation === "PUT";
}

/**
 * Revision-checked read-modify-write of one JSON KV value: reads it (null if absent or deleted),
 * calls `update`, and writes with `create` (absent) or `update(…, revision)`; on a revision
 * conflict it reads again and retries, so concurrent writers never lose or double-apply a change.
 * `update` may throw `KeepRecord` to write nothing (the result is then `{written: false}`), or any
 * other error to abort. Resolves with the value written and its revision.
 */
export async function mutateKvRecord<T>(
  kv: KV,
  key: string,
  parse: (raw: unknown) => T,
  update: (current: T | null) => T | Promise<T>,
): Promise<{ written: boolean; value: T | null; revision: number }> {
  for (let attempt = 0; attempt < MAX_CAS_ATTEMPTS; attempt++) {
    const entry = await kv.get(key);
    const current = isLive(entry) ? parse(entry.json()) : null;
    let next: T;
    try {
      next = await update(current);
    } catch (err) {
      if (err instanceof KeepRecord)
        return { written: false, value: current, revision: entry?.revision ?? 0 };
      throw err;
    }
    try {
      const revision = isLive(entry)
        ? await kv.update(key, encodeJson(next), entry.revision)
        : entry === null
          ? await kv.create(key, encodeJson(next))
          : // deleted or purged: create() accepts it, but only if nobody wrote since
            await kv.update(key, encodeJson(next), entry.revision);
      return { written: true, value: next, revision };
    } catch (err) {
      if (!isRevisionConflict(err)) throw err;
    }
  }
  throw new GeodeError(ErrorCode.Unavailable, `too many concurrent updates of ${key}`);
}

/** The durable session records of KV `{ns}_sessions` (DESIGN §7). */
export class SessionStore {
  private constructor(
    private readonly kv: KV,
    private readonly keyOf: (sessionId: string) => string,
  ) {}

  static async open(conn: GeodeConnection): Promise<SessionStore> {
    const kv = await ensureBucket(conn.nc, conn.names, "sessions");
    return new SessionStore(kv, (id) => conn.names.sessionKey(id));
  }

  async get(sessionId: string): Promise<SessionRecord | null> {
    const entry = await this.kv.get(this.keyOf(sessionId));
    return isLive(entry) ? SessionRecordSchema.parse(entry.json()) : null;
  }

  /** Revision-checked update of one session record (see `mutateKvRecord`). */
  mutate(sessionId: string, update: (current: SessionRecord | null) => SessionRecord) {
    return mutateKvRecord(this.kv, this.keyOf(sessionId), (raw) => SessionRecordSchema.parse(raw), update);
  }
}

/** Terminal session states. */
export const TERMINAL_STATUSES: ReadonlySet<SessionStatus> = new Set(["completed", "error"]);

export interface SessionStartRequest {
  session_id: string;
  model: string;
  provider: string;
  /** Resume an existing session (generation + 1); without it an existing session is refused. */
  resume?: boolean;
  /** Other correlation ids for the hook, event and timeline (run_id, turn_id, …). */
  correlation?: CorrelationInput;
}

export interface SessionStartResult {
  session_id: string;
  record: SessionRecord;
  resumed: boolean;
  /** Correlation to use for the session's work (session_id and generation filled in). */
  correlation: Correlation;
  /** The SessionStart outcome, or null when the hook could not be invoked (see `hookError`). */
  outcome: DispatchOutcome | null;
  hookError?: GeodeError;
}

export interface SessionEndRequest {
  reason: string;
  status: "completed" | "error";
  correlation?: CorrelationInput;
}

export interface SessionEndResult {
  /** True for the one call that made the terminal state durable; false when it was already ended. */
  ended: boolean;
  record: SessionRecord | null;
  outcome: DispatchOutcome | null;
  hookError?: GeodeError;
}

export interface Sessions {
  /**
   * Creates (or, with `resume`, resumes) the session durably in KV `{ns}_sessions`, revision-checked;
   * only then invokes SessionStart and publishes `session_started` and `session.started`. A resume
   * increments the generation and keeps a `paused` status (a parked verification stays parked).
   */
  start(request: SessionStartRequest): Promise<SessionStartResult>;
  /**
   * Makes the terminal state (`completed` or `error`) durable; only the call whose revision-checked
   * update wins then clears the session's per-session state (its verification counters in
   * `{ns}_verify`), invokes SessionEnd and publishes `session_ended` and `session.ended`. Any other
   * call, concurrent or later, returns `ended: false` and fires nothing.
   */
  end(sessionId: string, request: SessionEndRequest): Promise<SessionEndResult>;
  get(sessionId: string): Promise<SessionRecord | null>;
}

export interface SessionsOptions {
  /** Publisher of events and timeline records (default: a bus with source `runtime`). */
  events?: RuntimeEventBus;
  hooks?: HookClient;
  /** Budget of each hook invocation (default 30 s). */
  hookTimeoutMs?: number;
}

/** Invokes a lifecycle hook; a failure is returned, not thrown (the durable state already changed). */
export async function invokeLifecycleHook<H extends HookName>(
  hooks: HookClient,
  hook: H,
  payload: HookPayloadInput<H>,
  corr: Correlation,
  timeoutMs: number | undefined,
): Promise<{ outcome: DispatchOutcome | null; hookError?: GeodeError }> {
  try {
    const outcome = await hooks.invoke(hook, payload, corr, timeoutMs ? { timeoutMs } : {});
    return { outcome };
  } catch (err) {
    return { outcome: null, hookError: toGeodeError(err) };
  }
}

/** Lazily created default event bus of an SDK helper. */
export function lazyEvents(conn: GeodeConnection, given?: RuntimeEventBus): () => Promise<RuntimeEventBus> {
  let bus: Promise<RuntimeEventBus> | undefined = given ? Promise.resolve(given) : undefined;
  return () => {
    bus ??= RuntimeEventBus.create({ nc: conn.nc, names: conn.names, source: "runtime" });
    return bus;
  };
}

/** Deletes (with history) every root-turn verification state of one session. */
export async function clearSessionState(conn: GeodeConnection, sessionId: string): Promise<number> {
  const kv = await ensureBucket(conn.nc, conn.names, "verify");
  const keys: string[] = [];
  for await (const key of await kv.keys(conn.names.verifySessionFilter(sessionId))) keys.push(key);
  for (const key of keys) await kv.purge(key);
  return keys.length;
}

/** Opens the sessions bucket on first use and keeps it. */
export function lazySessionStore(conn: GeodeConnection): () => Promise<SessionStore> {
  let store: Promise<SessionStore> | undefined;
  return () => {
    store ??= SessionStore.open(conn);
    return store;
  };
}

/** The runtime's session lifecycle (DESIGN §7). */
export function createSessions(conn: GeodeConnection, options: SessionsOptions = {}): Sessions {
  const hooks = options.hooks ?? createHookClient(conn.nc, conn.names);
  const events = lazyEvents(conn, options.events);
  const sessions = lazySessionStore(conn);

  return {
    async get(sessionId) {
      return (await sessions()).get(sessionId);
    },

    async start(request) {
      if (request.session_id === "")
        throw new GeodeError(ErrorCode.InvalidRequest, "session_id must not be empty");
      let resumed = false;
      const { value: record } = await (await sessions()).mutate(request.session_id, (current) => {
        const now = Date.now();
        if (current === null) {
          resumed = false;
          return {
            status: "active",
            reason: "",
            generation: 0,
            model: request.model,
            provider: request.provider,
            updated_at: now,
          };
        }
        if (!request.resume)
          throw new GeodeError(ErrorCode.InvalidRequest, `session ${request.session_id} already exists`);
        resumed = true;
        return {
          status: current.status === "paused" ? "paused" : "active",
          reason: current.status === "paused" ? current.reason : "",
          generation: current.generation + 1,
          model: request.model,
          provider: request.provider,
          updated_at: now,
        };
      });
      const rec = record as SessionRecord;
      const corr = fillCorrelation({
        ...request.correlation,
        session_id: request.session_id,
        session_generation: rec.generation,
      });
      const hook = await invokeLifecycleHook(
        hooks,
        HookName.SessionStart,
        { model: rec.model, provider: rec.provider, resumed, status: rec.status },
        corr,
        options.hookTimeoutMs,
      );
      const bus = await events();
      const facts = {
        model: rec.model,
        provider: rec.provider,
        resumed,
        status: rec.status,
        generation: rec.generation,
      };
      await Promise.all([
        bus.emit(RuntimeEvent.SESSION_STARTED, facts, corr),
        bus.timeline("session.started", facts, corr),
      ]);
      return { session_id: request.session_id, record: rec, resumed, correlation: corr, ...hook };
    },

    async end(sessionId, request) {
      const result = await (await sessions()).mutate(sessionId, (current) => {
        if (current === null) throw new GeodeError(ErrorCode.InvalidRequest, `unknown session ${sessionId}`);
        if (TERMINAL_STATUSES.has(current.status)) throw new KeepRecord();
        return { ...current, status: request.status, reason: request.reason, updated_at: Date.now() };
      });
      if (!result.written) return { ended: false, record: result.value, outcome: null };
      const rec = result.value as SessionRecord;
      // Per-session state lives until this durable end, and no longer.
      await clearSessionState(conn, sessionId);
      const corr = fillCorrelation({
        ...request.correlation,
        session_id: sessionId,
        session_generation: rec.generation,
      });
      const hook = await invokeLifecycleHook(
        hooks,
        HookName.SessionEnd,
        { reason: request.reason, status: request.status },
        corr,
        options.hookTimeoutMs,
      );
      const bus = await events();
      const facts = { reason: request.reason, status: request.status, generation: rec.generation };
      await Promise.all([
        bus.emit(RuntimeEvent.SESSION_ENDED, facts, corr),
        bus.timeline("session.ended", facts, corr),
      ]);
      return { ended: true, record: rec, ...hook };
    },
  };
}
