export { type McpBridge, type McpBridgeOptions, startMcpBridge } from "./mcp-bridge.js";
export { MCP_BRIDGE_DEFAULTS, MCP_BRIDGE_ENV, type McpBridgeLimits } from "./mcp-bridge-config.js";
