import type { Logger } from "@geode/bus";
import { describeDbError } from "@geode/projection";

/**
 * Whether the audit tables can be written: an outage is logged once when it starts and once when
 * it ends, however many attempts fail in between; health reads it meanwhile.
 */
export class DbOutage {
  #downSince: number | undefined;
  #reason = "";

  constructor(
    private readonly log: Logger,
    private readonly database: string,
  ) {}

  get reason(): string | undefined {
    return this.#downSince === undefined ? undefined : this.#reason;
  }

  failed(err: unknown): void {
    this.#reason = `audit database (${this.database}) unavailable: ${describeDbError(err)}`;
    if (this.#downSince !== undefined) return;
    this.#downSince = Date.now();
    this.log.error({ reason: this.#reason }, "audit database unavailable; retrying with backoff");
  }

  succeeded(): void {
    if (this.#downSince === undefined) return;
    const downMs = Date.now() - this.#downSince;
    this.#downSince = undefined;
    this.log.info(
      { down_ms: downMs },
      `audit database available again after ${(downMs / 1000).toFixed(1)} s`,
    );
  }
}
