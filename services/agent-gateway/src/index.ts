export { AgentDirectory } from "./agent-directory.js";
export { type AgentGateway, type AgentGatewayOptions, startAgentGateway } from "./agent-gateway.js";
export { handleClaudeCodeHook, unavailableOutput } from "./claude-code/claude-code-hook.js";
export {
  DEFAULT_GATEWAY_ADDR,
  DEFAULT_MAX_BODY_BYTES,
  GATEWAY_ENV,
  type GatewayConfig,
  gatewayConfig,
  gatewayTimeouts,
} from "./gateway-config.js";
export { startWebhookBridge, type WebhookBridge } from "./webhook-bridge.js";
