// The lifecycle of the plane's sessions, sub-agents and approvals, in one place below the agent
// runtime (@geode/runtime) and the agent gateway, which both call it.
export { type ApprovalAnswer, requestApproval } from "./approval.js";
export {
  type HookResult,
  invokeLifecycleHook,
  type LifecycleDeps,
  type LifecycleEvents,
  type LifecycleSessions,
} from "./lifecycle-deps.js";
export {
  decidePermission,
  describeCall,
  type PermissionDeps,
  type PermissionQuestion,
  type PermissionVerdict,
} from "./permission.js";
export {
  endSession,
  type ResumeRule,
  type SessionEndRequest,
  type SessionEndResult,
  type SessionStartRequest,
  type SessionStartResult,
  startSession,
} from "./session-lifecycle.js";
export {
  type StartedSubagent,
  type SubagentStartRequest,
  type SubagentStopRequest,
  type SubagentStopResult,
  startSubagent,
  stopSubagent,
} from "./subagent-lifecycle.js";
