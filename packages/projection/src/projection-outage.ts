import { describeDbError } from "./errors.js";

/** The part of a structured logger (pino's, for one) that the projection writes to. */
export interface ProjectionLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** What a component reports on health while the projection is (or is not) writable. */
export interface ProjectionHealth {
  status: "ok" | "degraded";
  /** Why it is degraded: the last database error, one line. */
  reason?: string;
}

/** Capped exponential backoff of failed projection writes. */
export interface RetryPolicy {
  /** Wait after the first failure (ms). */
  initialMs: number;
  /** The longest wait between two attempts (ms). */
  maxMs: number;
}

/** 100 ms, doubling up to 2 s: a database that comes back is written to within about 2 s. */
export const DEFAULT_RETRY: RetryPolicy = { initialMs: 100, maxMs: 2_000 };

/** The wait before attempt `attempt + 1` (0-based): doubling, capped, with ±20% jitter. */
export function backoffDelay(policy: RetryPolicy, attempt: number): number {
  const base = Math.min(policy.maxMs, policy.initialMs * 2 ** Math.min(attempt, 30));
  return Math.round(base * (0.8 + Math.random() * 0.4));
}

/**
 * Tracks whether the projection is writable, shared by everything that writes it in one process.
 * An outage is logged once when it starts (with the reason) and once when it ends (how long, how
 * many batches waited), however many attempts fail in between; health reads it meanwhile.
 */
export class ProjectionOutage {
  private downSince: number | undefined;
  private reason = "";
  private readonly waiting = new Set<number>();
  private failedAttempts = 0;
  /** When the last successful attempt started: older attempts that fail later reopen nothing. */
  private lastSuccessStart = Number.NEGATIVE_INFINITY;

  /** `database`: which one, for the log line and the reason (e.g. a URL without its password). */
  constructor(
    private readonly log: ProjectionLogger,
    private readonly now: () => number = Date.now,
    private readonly database?: string,
  ) {}

  get health(): ProjectionHealth {
    return this.downSince === undefined ? { status: "ok" } : { status: "degraded", reason: this.reason };
  }

  /** Marks the start of an attempt; pass the result to `failed` or `succeeded`. */
  attempt(): number {
    return this.now();
  }

  /**
   * An attempt of `work` (a batch id, or any number naming what waits), started at `startedAt`,
   * failed. An attempt that started before the last success is stale news: writers run
   * concurrently, and one that was already failing must not reopen an outage that just ended.
   */
  failed(work: number, err: unknown, startedAt: number = this.now()): void {
    if (this.downSince === undefined && startedAt < this.lastSuccessStart) return;
    const which = this.database !== undefined ? ` (${this.database})` : "";
    this.reason = `projection database${which} unavailable: ${describeDbError(err)}`;
    this.failedAttempts++;
    this.waiting.add(work);
    if (this.downSince !== undefined) return;
    this.downSince = this.now();
    this.log.error({ reason: this.reason }, "projection unavailable; retrying with backoff");
  }

  /**
   * An attempt that started at `startedAt` succeeded: ends the outage, if there was one and the
   * attempt started after it did. One that was already under way when the outage began (a
   * transaction on a connection the stopping database had not closed yet) says nothing about now.
   */
  succeeded(startedAt: number = this.now()): void {
    this.lastSuccessStart = Math.max(this.lastSuccessStart, startedAt);
    if (this.downSince === undefined || startedAt < this.downSince) return;
    const downMs = this.now() - this.downSince;
    this.log.info(
      { down_ms: downMs, waited_batches: this.waiting.size, failed_attempts: this.failedAttempts },
      `projection available again after ${(downMs / 1000).toFixed(1)} s (${this.waiting.size} batches waited)`,
    );
    this.downSince = undefined;
    this.reason = "";
    this.waiting.clear();
    this.failedAttempts = 0;
  }
}
