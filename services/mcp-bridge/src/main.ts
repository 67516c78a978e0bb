import { runService } from "@geode/service";
import { serviceTelemetry } from "@geode/telemetry";
import { MCP_BRIDGE_ENV, startMcpBridge } from "./index.js";

await runService(
  "mcp-bridge",
  { env: MCP_BRIDGE_ENV, telemetry: serviceTelemetry },
  ({ bus, names, log, settings, config }) =>
    startMcpBridge({ nc: bus, names, log, limits: settings, resultInlineBytes: config.resultInlineBytes }),
);
