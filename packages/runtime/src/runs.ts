import type { GeodeConnection } from "@geode/bus";
import type { RunRecord } from "@geode/contracts";
import { RunStore } from "@geode/state";

/** Marks run projections active or closed (KV `{ns}_runs`, key = run id). */
export interface Runs {
  /** Activates the run projection; opening an active run keeps it as it is. */
  open(runId: string): Promise<RunRecord>;
  /** Closes it; closing a closed run is a no-op. Unknown run → `invalid_request`. */
  close(runId: string): Promise<RunRecord>;
  /** The run's record, or null if it was never opened. */
  get(runId: string): Promise<RunRecord | null>;
}

/**
 * `runs.open(run_id)` / `runs.close(run_id)`: while a run is active, the activity-recorder mirrors
 * its rows to `{GEODE_RUNS_DIR}/{run_id}/events.jsonl` (rows whose `ts` lies between `opened_at`
 * and `closed_at`). Run ids match `RUN_ID_PATTERN`; others are `invalid_request`.
 */
export function createRuns(conn: GeodeConnection): Runs {
  let store: Promise<RunStore> | undefined;
  const runs = () => {
    store ??= RunStore.open(conn);
    return store;
  };
  return {
    open: async (runId) => (await runs()).open(runId),
    close: async (runId) => (await runs()).close(runId),
    get: async (runId) => (await runs()).get(runId),
  };
}
