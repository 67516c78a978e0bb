import { runService } from "@geode/service";
import { serviceTelemetry } from "@geode/telemetry";
import { startActivityRecorder } from "./index.js";
import { RECORDER_ENV } from "./recorder-config.js";

await runService(
  "activity-recorder",
  { env: RECORDER_ENV, telemetry: serviceTelemetry },
  ({ config, settings, nc, names, log, observer }) =>
    startActivityRecorder({
      nc,
      names,
      log,
      observer,
      databaseUrl: config.databaseUrl,
      runsDir: config.runsDir,
      ...settings,
    }),
);
