import { runService } from "@geode/bus";
import { DEFAULT_ACK_WAIT_MS, DEFAULT_BATCH_SIZE, DEFAULT_WRITERS, startActivityRecorder } from "./index.js";
import { DEFAULT_RUN_FILE_MAX_BYTES } from "./run-mirror.js";

/** Optional tuning beyond DESIGN §10 (positive integers): batch size, writers, ack wait, run file bound. */
function intEnv(name: string, def: number): number {
  const v = process.env[name];
  if (v === undefined || v.trim() === "") return def;
  const n = Number(v);
  if (!Number.isInteger(n) || n <= 0) {
    process.stderr.write(`activity-recorder: invalid configuration: ${name} must be a positive integer\n`);
    process.exit(2);
  }
  return n;
}

const batchSize = intEnv("GEODE_RECORDER_BATCH_SIZE", DEFAULT_BATCH_SIZE);
const writers = intEnv("GEODE_RECORDER_WRITERS", DEFAULT_WRITERS);
const ackWaitMs = intEnv("GEODE_RECORDER_ACK_WAIT_MS", DEFAULT_ACK_WAIT_MS);
const runFileMaxBytes = intEnv("GEODE_RUN_FILE_MAX_BYTES", DEFAULT_RUN_FILE_MAX_BYTES);

await runService("activity-recorder", ({ config, nc, names, log }) =>
  startActivityRecorder({
    nc,
    names,
    log,
    databaseUrl: config.databaseUrl,
    runsDir: config.runsDir,
    batchSize,
    writers,
    ackWaitMs,
    runFileMaxBytes,
  }),
);
