import { runService } from "@geode/bus";
import { startToolExecutor, TOOL_EXECUTOR_ENV } from "./index.js";

await runService("tool-executor", { env: TOOL_EXECUTOR_ENV }, ({ nc, names, log, config, settings }) =>
  startToolExecutor({
    nc,
    names,
    log,
    config: {
      ...settings,
      approvalTimeoutMs: config.approvalTimeoutMs,
      resultInlineBytes: config.resultInlineBytes,
    },
  }),
);
