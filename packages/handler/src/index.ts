// The loop that serves a hook handler: its registration in KV, its heartbeat and its queue-group
// replies. The SDK re-exports `serveHook`; services that are handlers (the policy-guard) call
// `serveHookAnswers`.
export {
  DEFAULT_HANDLER_LEASE_MS,
  DEFAULT_HANDLER_PRIORITY,
  DEFAULT_HANDLER_TIMEOUT_MS,
  type HookAnswer,
  type HookCall,
  type HookHandler,
  type ServedHook,
  type ServeHookOptions,
  serveHook,
  serveHookAnswers,
} from "./serve-hook.js";
