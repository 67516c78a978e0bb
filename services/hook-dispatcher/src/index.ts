export type { HandlerRegistry, RegisteredHandler } from "./handler-registry.js";
export { AUDIT_REASON_CHARS, type HandlerErrorType } from "./hook-chain.js";
export {
  type HookDispatcher,
  type HookDispatcherOptions,
  startHookDispatcher,
} from "./hook-dispatcher.js";
export type { WebhookBridge } from "./webhook-bridge.js";
export type { WebhookCallOptions } from "./webhook-call.js";
