export { AgentDirectory } from "./agent-directory.js";
export { type AgentGateway, type AgentGatewayOptions, startAgentGateway } from "./agent-gateway.js";
export { unavailableOutput } from "./claude-code/claude-code-adapter.js";
export {
  DEFAULT_GATEWAY_ADDR,
  DEFAULT_MAX_BODY_BYTES,
  GATEWAY_ENV,
  type GatewayConfig,
  gatewayConfig,
  gatewayTimeouts,
} from "./gateway-config.js";
