import { runService } from "@geode/service";
import { serviceTelemetry } from "@geode/telemetry";
import { GATEWAY_ENV, gatewayTimeouts, startAgentGateway } from "./index.js";

await runService(
  "agent-gateway",
  { env: GATEWAY_ENV, telemetry: serviceTelemetry },
  async ({ bus, names, log, config, settings, observer }) => {
    const { host, port } = settings.addr;
    try {
      return await startAgentGateway({
        nc: bus,
        names,
        log,
        observer,
        config: {
          host,
          port,
          maxBodyBytes: settings.maxBodyBytes,
          timeouts: gatewayTimeouts(settings),
          approvalTimeoutMs: config.approvalTimeoutMs,
          mcpSessionIdleMs: settings.mcpSessionIdleMs,
          llmMaxBodyBytes: settings.llmMaxBodyBytes,
          llmTimeoutMs: settings.llmTimeoutMs,
        },
      });
    } catch (err) {
      log.fatal({ err, addr: `${host}:${port}` }, "agent-gateway could not start");
      process.exit(1);
    }
  },
);
