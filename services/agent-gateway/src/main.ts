import { runService } from "@geode/bus";
import { type GatewayConfig, GatewayConfigError, gatewayConfig, startAgentGateway } from "./index.js";

let config: GatewayConfig;
try {
  config = gatewayConfig(process.env);
} catch (err) {
  process.stderr.write(`agent-gateway: ${err instanceof GatewayConfigError ? err.message : String(err)}\n`);
  process.exit(2);
}

await runService("agent-gateway", async (ctx) => {
  try {
    return await startAgentGateway({
      nc: ctx.nc,
      names: ctx.names,
      log: ctx.log,
      config: { ...config, approvalTimeoutMs: ctx.config.approvalTimeoutMs },
    });
  } catch (err) {
    ctx.log.fatal({ err, addr: `${config.host}:${config.port}` }, "agent-gateway could not start");
    process.exit(1);
  }
});
