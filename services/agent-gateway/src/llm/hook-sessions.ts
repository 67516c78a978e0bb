import type { GeodeConnection, Logger } from "@geode/bus";
import { type SessionRecord, SessionRecordSchema } from "@geode/contracts";
import { KvRecords, type RecordWatch } from "@geode/state";

/** A session record's key back to the session id (`=` + base64url for ids that are not one token). */
function sessionIdOf(key: string): string {
  return key.startsWith("=") ? Buffer.from(key.slice(1), "base64url").toString("utf8") : key;
}

/** How often the whole bucket is re-read under the watch (it may hold every session ever seen). */
const RESYNC_MS = 300_000;

/**
 * The open hook sessions of each agent, from KV `{ns}_sessions` (the records the gateway's hook
 * calls write on any replica, with the agent whose token sent them): a model call is tied to its
 * agent's session open at that moment (DESIGN section 21). A session is open while its record is
 * `active` and it has been used within the idle gap: its start (or resume, or model switch), or a
 * model call tied to it here.
 */
export class HookSessions {
  /** agent → session id → last use (epoch ms). */
  private readonly open = new Map<string, Map<string, number>>();
  /** session id → its agent. */
  private readonly agentOf = new Map<string, string>();
  private watch: RecordWatch | undefined;

  private constructor(private readonly idleMs: number) {}

  static async start(conn: GeodeConnection, log: Logger, idleMs: number): Promise<HookSessions> {
    const sessions = new HookSessions(idleMs);
    const records = await KvRecords.open(conn, "sessions", (raw) => SessionRecordSchema.parse(raw));
    sessions.watch = await records.watch(({ key, value }) => sessions.apply(sessionIdOf(key), value), {
      resyncMs: RESYNC_MS,
      onError: (err) => log.warn({ err }, "the sessions watch ended"),
    });
    return sessions;
  }

  stop(): void {
    void this.watch?.stop();
  }

  private apply(id: string, record: SessionRecord | null): void {
    const was = this.agentOf.get(id);
    if (was !== undefined) {
      const mine = this.open.get(was);
      mine?.delete(id);
      if (mine?.size === 0) this.open.delete(was);
      this.agentOf.delete(id);
    }
    if (!record?.agent || record.status !== "active") return;
    const mine = this.open.get(record.agent) ?? new Map<string, number>();
    this.open.set(record.agent, mine);
    mine.set(id, record.updated_at);
    this.agentOf.set(id, record.agent);
  }

  /**
   * The agent's session open at `now` when it has exactly one (its use noted), else null: with none
   * or several the call cannot be tied to one, and goes to the agent's own model-call session.
   */
  tie(agent: string, now = Date.now()): string | null {
    const mine = this.open.get(agent);
    if (!mine) return null;
    let found: string | null = null;
    for (const [id, last] of mine) {
      // Idle past the gap (an agent that never ends its sessions): no longer open.
      if (now - last > this.idleMs) {
        mine.delete(id);
        this.agentOf.delete(id);
        continue;
      }
      if (found !== null) return null;
      found = id;
    }
    if (found !== null) mine.set(found, now);
    return found;
  }
}
