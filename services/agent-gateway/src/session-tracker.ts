import type { Logger } from "@geode/bus";
import { type Correlation, HookName, RuntimeEvent, type SessionRecord, sanitizeText } from "@geode/contracts";
import { KeepRecord, type Plane } from "./plane.js";

/** Claude Code sessions talk to Anthropic models. */
export const PROVIDER = "anthropic";

interface Known {
  generation: number;
  model: string;
  checkedAt: number;
}

/** A model name as the agent gave it, bounded and secret-masked; undefined when it gave none. */
function modelOf(raw: string | undefined): string | undefined {
  return raw === undefined || raw === "" ? undefined : sanitizeText(raw, 128);
}

export interface StartFacts {
  /** Claude Code's SessionStart `source` (startup, resume, fork, clear, compact), if it said. */
  source?: string | undefined;
  model?: string | undefined;
}

/**
 * The plane's view of Claude Code sessions: a durable record per session in KV `{ns}_sessions` and
 * an active run per session in `{ns}_runs`. Claude Code sends SessionStart only to command hooks,
 * so a session the plane has not seen yet (or saw end) is started on its first event, whatever it
 * is; the revision-checked record makes exactly one request, on any replica, start it. Replicas
 * keep what they learnt for a few seconds only, so they stay interchangeable.
 */
export class SessionTracker {
  private readonly known = new Map<string, Known>();
  private readonly inflight = new Map<string, Promise<number>>();

  constructor(
    private readonly plane: Plane,
    private readonly log: Logger,
    private readonly ttlMs = 10_000,
    private readonly maxKnown = 10_000,
  ) {}

  /**
   * The session's generation, starting the session first when the plane has not seen it. `model`
   * is the model the agent names in this event, if any: a session started now records it, and a
   * model that differs from the recorded one (an agent that names it late, or switched) is
   * written to the record and published as `model_switched`.
   */
  ensure(correlation: Correlation, signal?: AbortSignal, model?: string): Promise<number> {
    const id = correlation.session_id;
    const named = modelOf(model);
    const hit = this.known.get(id);
    if (hit && Date.now() - hit.checkedAt < this.ttlMs && (named === undefined || named === hit.model))
      return Promise.resolve(hit.generation);
    let p = this.inflight.get(id);
    if (!p) {
      p = this.begin(correlation, { model: named }, false, signal).finally(() => this.inflight.delete(id));
      this.inflight.set(id, p);
    }
    return p;
  }

  /** Claude Code's SessionStart: a new session, or a resumed one (a new generation). */
  async start(correlation: Correlation, facts: StartFacts, signal?: AbortSignal): Promise<number> {
    return this.begin(correlation, { ...facts, model: modelOf(facts.model) }, true, signal);
  }

  /**
   * Claude Code's SessionEnd: makes the completed state durable, then (only for the request that
   * did) invokes SessionEnd, publishes `session_ended` / `session.ended` and closes the run.
   */
  async end(correlation: Correlation, reason: string, signal?: AbortSignal): Promise<void> {
    const generation = await this.ensure(correlation, signal);
    const id = correlation.session_id;
    this.known.delete(id);
    const result = await this.plane.mutateSession(id, (current) => {
      if (current === null || current.status === "completed" || current.status === "error")
        throw new KeepRecord();
      return { ...current, status: "completed", reason, updated_at: Date.now() };
    });
    if (!result.written) return;
    const corr = { ...correlation, session_generation: result.value?.generation ?? generation };
    await this.plane
      .invokeHook(HookName.SessionEnd, { reason, status: "completed" }, corr, { signal })
      .catch((err: unknown) => this.hookFailed(HookName.SessionEnd, err, corr));
    const facts = { reason, status: "completed", generation: corr.session_generation };
    this.plane.emit(RuntimeEvent.SESSION_ENDED, facts, corr);
    this.plane.timeline("session.ended", facts, corr);
    if (corr.run_id !== "")
      await this.plane.closeRun(corr.run_id).catch((err: unknown) => {
        this.log.warn({ err, run_id: corr.run_id }, "could not close run");
      });
  }

  private async begin(
    correlation: Correlation,
    facts: StartFacts,
    explicit: boolean,
    signal: AbortSignal | undefined,
  ): Promise<number> {
    const id = correlation.session_id;
    const resumeAsked = facts.source === "resume" || facts.source === "fork";
    let existed = false;
    let switched: { from: string; to: string } | undefined;
    const result = await this.plane.mutateSession(id, (current): SessionRecord => {
      const now = Date.now();
      existed = current !== null;
      switched = undefined;
      const fresh = { status: "active" as const, reason: "", updated_at: now };
      if (current === null) return { ...fresh, generation: 0, model: facts.model ?? "", provider: PROVIDER };
      const ended = current.status === "completed" || current.status === "error";
      if (ended || (explicit && resumeAsked))
        return {
          ...current,
          // A parked verification stays parked across a resume.
          ...(current.status === "paused" ? {} : fresh),
          updated_at: now,
          generation: current.generation + 1,
          model: facts.model ?? current.model,
        };
      if (facts.model === undefined || facts.model === current.model) throw new KeepRecord();
      switched = { from: current.model, to: facts.model };
      return { ...current, model: facts.model, updated_at: now };
    });
    const record = result.value;
    const generation = record?.generation ?? 0;
    this.remember(id, generation, record?.model ?? "");
    if (!result.written || !record) return generation;
    if (switched) {
      const corr = { ...correlation, session_generation: generation };
      this.plane.emit(RuntimeEvent.MODEL_SWITCHED, { ...switched, provider: record.provider }, corr);
      return generation;
    }

    const corr = { ...correlation, session_generation: generation };
    if (corr.run_id !== "")
      await this.plane.openRun(corr.run_id).catch((err: unknown) => {
        this.log.warn({ err, run_id: corr.run_id }, "could not open run");
      });
    const resumed = existed;
    await this.plane
      .invokeHook(
        HookName.SessionStart,
        { model: record.model, provider: record.provider, resumed, status: record.status },
        corr,
        { signal },
      )
      .catch((err: unknown) => this.hookFailed(HookName.SessionStart, err, corr));
    const started = {
      model: record.model,
      provider: record.provider,
      resumed,
      status: record.status,
      generation,
      agent: "claude-code",
      ...(facts.source ? { source: facts.source } : {}),
    };
    this.plane.emit(RuntimeEvent.SESSION_STARTED, started, corr);
    this.plane.timeline("session.started", started, corr);
    return generation;
  }

  private remember(id: string, generation: number, model: string): void {
    if (this.known.size >= this.maxKnown) {
      const oldest = this.known.keys().next().value;
      if (oldest !== undefined) this.known.delete(oldest);
    }
    this.known.delete(id);
    this.known.set(id, { generation, model, checkedAt: Date.now() });
  }

  private hookFailed(hook: string, err: unknown, corr: Correlation): void {
    // The durable state already changed; a lifecycle hook that cannot run is logged, not fatal.
    this.log.warn(
      { err_type: err instanceof Error ? err.name : typeof err, hook, session_id: corr.session_id },
      "lifecycle hook could not run",
    );
  }
}
