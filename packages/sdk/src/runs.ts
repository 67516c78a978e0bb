import { ensureBucket } from "@geode/bus";
import { ErrorCode, GeodeError, type RunRecord, RunRecordSchema } from "@geode/contracts";
import type { KV } from "@nats-io/kv";
import type { GeodeConnection } from "./connection.js";

/**
 * Run ids name a KV key and a directory (`{GEODE_RUNS_DIR}/{run_id}`), so they are one safe path
 * segment: letters, digits, `_`, `-`, `.` (not only dots), at most 128 characters.
 */
export const RUN_ID_PATTERN = /^(?!\.+$)[A-Za-z0-9_.-]{1,128}$/;

export function isValidRunId(runId: string): boolean {
  return RUN_ID_PATTERN.test(runId) && !runId.startsWith(".") && !runId.endsWith(".");
}

/** Marks run projections active or closed (KV `{ns}_runs`, key = run id). */
export interface Runs {
  /** Activates the run projection; opening an active run keeps it as it is. */
  open(runId: string): Promise<RunRecord>;
  /** Closes it; closing a closed run is a no-op. Unknown run → `invalid_request`. */
  close(runId: string): Promise<RunRecord>;
  /** The run's record, or null if it was never opened. */
  get(runId: string): Promise<RunRecord | null>;
}

function check(runId: string): void {
  if (!isValidRunId(runId))
    throw new GeodeError(
      ErrorCode.InvalidRequest,
      "run_id must match [A-Za-z0-9_.-]{1,128} (no leading/trailing dot)",
      {
        details: { run_id: runId.slice(0, 128) },
      },
    );
}

/**
 * `runs.open(run_id)` / `runs.close(run_id)`: while a run is active, the activity-recorder mirrors
 * its rows to `{GEODE_RUNS_DIR}/{run_id}/events.jsonl` (rows whose `ts` lies between `opened_at`
 * and `closed_at`).
 */
export function createRuns(conn: GeodeConnection): Runs {
  let bucket: Promise<KV> | undefined;
  const kv = () => {
    bucket ??= ensureBucket(conn.nc, conn.names, "runs");
    return bucket;
  };
  const read = async (runId: string) => {
    const e = await (await kv()).get(runId);
    if (e?.operation !== "PUT") return null;
    return { record: RunRecordSchema.parse(e.json()), revision: e.revision };
  };
  return {
    async open(runId) {
      check(runId);
      const current = await read(runId);
      if (current?.record.status === "active") return current.record;
      const record: RunRecord = { run_id: runId, status: "active", opened_at: Date.now(), closed_at: null };
      await (await kv()).put(runId, JSON.stringify(record));
      return record;
    },
    async close(runId) {
      check(runId);
      const current = await read(runId);
      if (!current) throw new GeodeError(ErrorCode.InvalidRequest, `run ${runId} was never opened`);
      if (current.record.status === "closed") return current.record;
      const record: RunRecord = { ...current.record, status: "closed", closed_at: Date.now() };
      await (await kv()).put(runId, JSON.stringify(record));
      return record;
    },
    async get(runId) {
      check(runId);
      return (await read(runId))?.record ?? null;
    },
  };
}
