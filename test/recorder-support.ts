import { randomUUID } from "node:crypto";
import type { RuntimeEventBus } from "@geode/bus";
import { normalizeRow, type ProjectionDb } from "@geode/projection";

/** `activity_events` rows of one session, or up to a stream sequence. */
export async function countActivity(
  db: ProjectionDb,
  filter: { session: string } | { upToSeq: number },
): Promise<number> {
  let q = db.db.selectFrom("activity_events").select((eb) => eb.fn.countAll().as("n"));
  q =
    "session" in filter
      ? q.where("session_id", "=", filter.session)
      : q.where("stream_seq", "<=", filter.upToSeq);
  return Number((await q.executeTakeFirstOrThrow()).n);
}

/** A steady load of `turn_completed` events (in 20 ms steps), remembering every id published. */
export function steadyLoad(bus: RuntimeEventBus, options: { perSecond: number; session: string }) {
  const ids: string[] = [];
  const timer = setInterval(() => {
    for (let k = 0; k < options.perSecond / 50; k++) {
      const id = randomUUID();
      ids.push(id);
      void bus.emit("turn_completed", { i: ids.length }, { session_id: options.session }, { id });
    }
  }, 20);
  return {
    ids,
    /** Stops publishing and waits until everything published is acknowledged by the stream. */
    async stop(): Promise<void> {
      clearInterval(timer);
      await bus.flush();
    },
  };
}

/** Every row of the three projection tables, normalized, in stream order (for equality checks). */
export async function projectionSnapshot(p: ProjectionDb) {
  return {
    activity: (await p.db.selectFrom("activity_events").selectAll().orderBy("stream_seq").execute()).map(
      normalizeRow,
    ),
    extension: (
      await p.db.selectFrom("extension_invocations").selectAll().orderBy("stream_seq").execute()
    ).map(normalizeRow),
    session: (await p.db.selectFrom("session_events").selectAll().orderBy("stream_seq").execute()).map(
      normalizeRow,
    ),
  };
}
