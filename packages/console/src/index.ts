export { ConsoleAuth, SESSION_COOKIE } from "./console-auth.js";
export { CONSOLE_ENV, consoleTimeouts } from "./console-config.js";
export {
  type ConsoleOptions,
  DEFAULT_CONSOLE_PORT,
  type RunningConsole,
  startConsole,
  WEB_DIST,
} from "./console-server.js";
export { type HandlerView, handlerViews } from "./handler-stats.js";
export type { PendingApproval } from "./pending-approvals.js";
export { type PlaneDownConsole, startPlaneDownConsole } from "./plane-down-console.js";
export type { RecorderLag } from "./recorder-lag.js";
export { cursorToken, parseCursorToken, type TimelineCursor, type TimelineItem } from "./run-timeline.js";
