import type { Logger } from "@geode/bus";
import { type Correlation, sanitizeText } from "@geode/contracts";
import { endSession, type ResumeRule, startSession } from "@geode/lifecycle";
import type { Plane } from "../plane.js";
import type { AgentIdentity } from "./agent-identity.js";

interface Known {
  generation: number;
  model: string;
  checkedAt: number;
}

export interface StartFacts {
  /** The agent's SessionStart `source` (Claude Code: startup, resume, fork, clear, compact), if it said. */
  source?: string | undefined;
  model?: string | undefined;
}

/** A model name as the agent gave it, bounded and secret-masked; undefined when it gave none. */
function modelOf(raw: string | undefined): string | undefined {
  return raw === undefined || raw === "" ? undefined : sanitizeText(raw, 128);
}

/**
 * The plane's view of agent sessions: a durable record per session in KV `{ns}_sessions` (with
 * the agent and its kind) and an active run per session in `{ns}_runs`, kept through the shared
 * lifecycle (@geode/lifecycle) as a runtime's are. Agents do not always send SessionStart (Claude
 * Code sends it only to command hooks), so a session the plane has not seen yet (or saw end) is
 * started on its first event, whatever it is; the revision-checked record makes exactly one
 * request, on any replica, start it. Replicas keep what they learnt for a few seconds only, so
 * they stay interchangeable.
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
  ensure(
    agent: AgentIdentity,
    correlation: Correlation,
    signal?: AbortSignal,
    model?: string,
  ): Promise<number> {
    const id = correlation.session_id;
    const named = modelOf(model);
    const hit = this.known.get(id);
    if (hit && Date.now() - hit.checkedAt < this.ttlMs && (named === undefined || named === hit.model))
      return Promise.resolve(hit.generation);
    let p = this.inflight.get(id);
    if (!p) {
      p = this.begin(agent, correlation, { model: named }, "if-ended", signal).finally(() =>
        this.inflight.delete(id),
      );
      this.inflight.set(id, p);
    }
    return p;
  }

  /** The agent's SessionStart: a new session, or a resumed one (a new generation). */
  start(
    agent: AgentIdentity,
    correlation: Correlation,
    facts: StartFacts,
    signal?: AbortSignal,
  ): Promise<number> {
    const resume = facts.source === "resume" || facts.source === "fork" ? "resume" : "if-ended";
    return this.begin(agent, correlation, { ...facts, model: modelOf(facts.model) }, resume, signal);
  }

  /**
   * The agent's SessionEnd: makes the completed state durable, then (only for the request that
   * did) invokes SessionEnd, publishes `session_ended` / `session.ended` and closes the run.
   */
  async end(
    agent: AgentIdentity,
    correlation: Correlation,
    reason: string,
    signal?: AbortSignal,
  ): Promise<void> {
    await this.ensure(agent, correlation, signal);
    this.known.delete(correlation.session_id);
    const result = await endSession(this.plane.lifecycle, {
      session_id: correlation.session_id,
      status: "completed",
      reason,
      ifExists: true,
      correlation,
      signal,
    });
    if (result.hookError) this.hookFailed("SessionEnd", result.hookError, correlation);
    if (result.ended && correlation.run_id !== "")
      await this.plane.closeRun(correlation.run_id).catch((err: unknown) => {
        this.log.warn({ err, run_id: correlation.run_id }, "could not close run");
      });
  }

  private async begin(
    agent: AgentIdentity,
    correlation: Correlation,
    facts: StartFacts,
    resume: ResumeRule,
    signal: AbortSignal | undefined,
  ): Promise<number> {
    const started = await startSession(this.plane.lifecycle, {
      session_id: correlation.session_id,
      model: facts.model,
      provider: agent.provider,
      resume,
      agent: { name: agent.name, kind: agent.kind },
      facts: facts.source ? { source: facts.source } : {},
      correlation,
      signal,
      // Each agent session is a run: open it before the session's first records.
      whenDurable: async ({ correlation: corr }) => {
        if (corr.run_id === "") return;
        await this.plane.openRun(corr.run_id).catch((err: unknown) => {
          this.log.warn({ err, run_id: corr.run_id }, "could not open run");
        });
      },
    });
    if (started.hookError) this.hookFailed("SessionStart", started.hookError, correlation);
    this.remember(correlation.session_id, started.record.generation, started.record.model);
    return started.record.generation;
  }

  private remember(id: string, generation: number, model: string): void {
    if (this.known.size >= this.maxKnown) {
      const oldest = this.known.keys().next().value;
      if (oldest !== undefined) this.known.delete(oldest);
    }
    this.known.delete(id);
    this.known.set(id, { generation, model, checkedAt: Date.now() });
  }

  private hookFailed(hook: string, err: Error, corr: Correlation): void {
    // The durable state already changed; a lifecycle hook that cannot run is logged, not fatal.
    this.log.warn({ err_type: err.name, hook, session_id: corr.session_id }, "lifecycle hook could not run");
  }
}
