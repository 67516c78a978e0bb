import { runService } from "@geode/service";
import { serviceTelemetry } from "@geode/telemetry";
import { startToolExecutor, TOOL_EXECUTOR_ENV } from "./index.js";

await runService(
  "tool-executor",
  { env: TOOL_EXECUTOR_ENV, telemetry: serviceTelemetry },
  ({ bus, observer, names, log, config, settings }) =>
    startToolExecutor({
      nc: bus,
      observer,
      names,
      log,
      config: {
        ...settings,
        approvalTimeoutMs: config.approvalTimeoutMs,
        resultInlineBytes: config.resultInlineBytes,
      },
    }),
);
