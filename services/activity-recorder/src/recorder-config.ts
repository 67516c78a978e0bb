import { envSpec, envVar, read } from "@geode/env";
import { DEFAULT_RUN_FILE_MAX_BYTES } from "./run-mirror.js";

export const DEFAULT_BATCH_SIZE = 1_000;
/** Batches of one stream written at once (each its own transaction and connection). */
export const DEFAULT_WRITERS = 2;
/**
 * Redelivery delay of a message nobody acked or marked in progress: after a replica dies, its
 * messages reach another replica within this time. Held messages are marked in progress three
 * times per period, so a long batch or a database outage never triggers a redelivery.
 */
export const DEFAULT_ACK_WAIT_MS = 3_000;

/** The activity-recorder's own environment (docs/operations.md, "Configuration"), beside the common one. */
export const RECORDER_ENV = envSpec({
  batchSize: envVar("GEODE_RECORDER_BATCH_SIZE", read.int(DEFAULT_BATCH_SIZE, 1), {
    default: `\`${DEFAULT_BATCH_SIZE}\``,
    meaning: "messages per projection transaction (activity-recorder)",
  }),
  writers: envVar("GEODE_RECORDER_WRITERS", read.int(DEFAULT_WRITERS, 1), {
    default: `\`${DEFAULT_WRITERS}\``,
    meaning: "batches of one stream written at once, each in its own transaction (activity-recorder)",
  }),
  ackWaitMs: envVar("GEODE_RECORDER_ACK_WAIT_MS", read.int(DEFAULT_ACK_WAIT_MS, 1), {
    default: `\`${DEFAULT_ACK_WAIT_MS}\``,
    meaning:
      "redelivery delay of a message held by a recorder replica that died; held messages are marked in progress meanwhile (activity-recorder)",
  }),
  runFileMaxBytes: envVar("GEODE_RUN_FILE_MAX_BYTES", read.int(DEFAULT_RUN_FILE_MAX_BYTES, 1), {
    default: "16 MiB",
    meaning: "bound of one run's `events.jsonl` (activity-recorder)",
  }),
});
