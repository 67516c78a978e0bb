import type { Logger } from "@geode/bus";
import { type ProjectionDatabase, quarantineSummary } from "@geode/projection";
import type { Kysely } from "kysely";

/** How often the note is read again, so that rows an operator deleted stop being named. */
const REFRESH_MS = 30_000;

/**
 * What the recorder's health says about `{ns}.quarantined_messages` while the projection is
 * writable: how many messages PostgreSQL refused, the latest, and where they are. Read from the
 * table (at start, after every quarantine, every 30 s), so every replica and every restart tells
 * the same until an operator has handled the rows (docs/operations.md#quarantined-messages).
 */
export class QuarantineNote {
  private text: string | undefined;
  private timer: NodeJS.Timeout | undefined;
  private reading: Promise<void> | undefined;

  constructor(
    private readonly db: Kysely<ProjectionDatabase>,
    private readonly ns: string,
    private readonly log: Logger,
  ) {}

  /** The health note; undefined when nothing is quarantined. */
  get note(): string | undefined {
    return this.text;
  }

  start(): void {
    void this.refresh();
    this.timer = setInterval(() => void this.refresh(), REFRESH_MS);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.reading;
  }

  /** Reads the table again (one read at a time; a failed read keeps the last note). */
  refresh(): Promise<void> {
    this.reading ??= this.read().finally(() => {
      this.reading = undefined;
    });
    return this.reading;
  }

  private async read(): Promise<void> {
    try {
      const { count, latest } = await quarantineSummary(this.db);
      if (count === 0) {
        this.text = undefined;
        return;
      }
      const where = latest.map((q) => `${q.stream} seq ${q.stream_seq}`).join(", ");
      this.text =
        `${count} message${count === 1 ? "" : "s"} quarantined: PostgreSQL refused ` +
        `${count === 1 ? "it" : "them"} (latest: ${where}); see ${this.ns}.quarantined_messages`;
    } catch (err) {
      this.log.debug({ err }, "quarantined messages not read");
    }
  }
}
