/** The durable consumer name every replica shares, on both streams. */
export { RECORDER_CONSUMER } from "@geode/contracts";
export {
  type ActivityRecorder,
  type ActivityRecorderOptions,
  startActivityRecorder,
} from "./activity-recorder.js";
export {
  DEFAULT_ACK_WAIT_MS,
  DEFAULT_BATCH_SIZE,
  DEFAULT_WRITERS,
  RECORDER_ENV,
} from "./recorder-config.js";
export { DEFAULT_RUN_FILE_MAX_BYTES, type MirrorItem, RunMirror } from "./run-mirror.js";
export { type ProjectorStats, StreamProjector } from "./stream-projector.js";
