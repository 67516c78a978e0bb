import type { GeodeConnection } from "@geode/bus";
import { ErrorCode, GeodeError, isValidRunId, type RunRecord, RunRecordSchema } from "@geode/contracts";
import { KvRecords } from "./kv-records.js";
import { KeepRecord } from "./mutate-kv-record.js";

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
 * Run projections, KV `{ns}_runs`, key = run id. Owner: the runtime (`runs.open` / `runs.close`);
 * the activity-recorder only reads it, to mirror the rows of active runs to JSONL.
 */
export class RunStore {
  private constructor(private readonly records: KvRecords<RunRecord>) {}

  static async open(conn: GeodeConnection): Promise<RunStore> {
    return new RunStore(await KvRecords.open(conn, "runs", (raw) => RunRecordSchema.parse(raw)));
  }

  /** Activates the run projection; opening an active run keeps it as it is. */
  async open(runId: string): Promise<RunRecord> {
    check(runId);
    const { value } = await this.records.mutate(runId, (current) => {
      if (current?.status === "active") throw new KeepRecord();
      return { run_id: runId, status: "active", opened_at: Date.now(), closed_at: null };
    });
    return value as RunRecord;
  }

  /** Closes it; closing a closed run is a no-op. An unknown run is `invalid_request`. */
  async close(runId: string): Promise<RunRecord> {
    check(runId);
    const { value } = await this.records.mutate(runId, (current) => {
      if (!current) throw new GeodeError(ErrorCode.InvalidRequest, `run ${runId} was never opened`);
      if (current.status === "closed") throw new KeepRecord();
      return { ...current, status: "closed", closed_at: Date.now() };
    });
    return value as RunRecord;
  }

  /** Every run, the most recently opened first. */
  async list(): Promise<RunRecord[]> {
    const rows = (await this.records.list()).map((r) => r.value);
    return rows.sort((a, b) => b.opened_at - a.opened_at);
  }

  /** The run's record, or null if it was never opened. */
  get(runId: string): Promise<RunRecord | null> {
    check(runId);
    return this.records.get(runId);
  }
}
