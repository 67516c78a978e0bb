export { type ConnectOptions, connectGeode, type GeodeConnection } from "./connection.js";
export {
  createHookClient,
  DEFAULT_INVOKE_TIMEOUT_MS,
  type HookClient,
  type InvokeOptions,
} from "./hook-client.js";
