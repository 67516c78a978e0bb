export { type McpBridge, startMcpBridge } from "./mcp-bridge.js";
export { MCP_BRIDGE_ENV } from "./mcp-bridge-config.js";
