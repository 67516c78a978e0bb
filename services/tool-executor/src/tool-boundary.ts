import type { RequestTags } from "@geode/bus";
import type { ToolExecuteReply } from "@geode/contracts";
import { admission } from "./stages/admission.js";
import { approval } from "./stages/approval.js";
import { commit } from "./stages/commit.js";
import { originalPolicy } from "./stages/policy.js";
import { postToolUse } from "./stages/post-tool-use.js";
import { preToolUse } from "./stages/pre-tool-use.js";
import { terminal } from "./stages/terminal.js";
import { type BoundaryDeps, openToolCall, type ToolCall } from "./stages/tool-call.js";
import { toolRequest } from "./stages/tool-request.js";

export type { BoundaryDeps, InvokeHook } from "./stages/tool-call.js";

/** One stage of the boundary: a reply ends the call there; undefined goes on to the next. */
type Stage = (call: ToolCall) => Promise<ToolExecuteReply | undefined> | ToolExecuteReply | undefined;

/**
 * The boundary order (docs/architecture.md, "The tool boundary"):
 * original policy → tool_request → policy + schema validation → PreToolUse → policy + schema
 * revalidation → PermissionRequest / approval → pending-call checkpoint → effect admission →
 * terminal executor, called once → tool_exec_ended → PostToolUse → receipt commit.
 */
const STAGES: readonly Stage[] = [
  originalPolicy, // a deny is final
  toolRequest, // tool_request middleware → policy + schema validation
  preToolUse, // PreToolUse → policy + schema revalidation of a rewrite
  approval, // PermissionRequest → a human on {ns}.approval.request
  admission, // tool.called checkpoint → admission receipt with its lease
  terminal, // tool_execution onion → the terminal, called once → tool_exec_ended
  postToolUse, // continue / add_context / block
];

/**
 * Runs one `{ns}.tool.execute` request through the boundary and answers it. `tags.tool` says the
 * tool's registered name once resolved (the metrics count calls by it; a name no tool has is
 * counted as `unknown`, since callers pick names).
 */
export async function runToolCall(
  deps: BoundaryDeps,
  body: unknown,
  tags: RequestTags = {},
): Promise<ToolExecuteReply> {
  const call = openToolCall(deps, body);
  try {
    return await runStages(call);
  } finally {
    if (call.resolvedName !== undefined) tags["tool"] = call.resolvedName;
  }
}

async function runStages(call: ToolCall): Promise<ToolExecuteReply> {
  try {
    for (const stage of STAGES) {
      const reply = await call.deps.observer.span(`geode.tool.${stage.name}`, async () => stage(call));
      if (reply) return reply;
    }
    return await call.deps.observer.span("geode.tool.commit", () => commit(call));
  } finally {
    // A stage that threw after admission: stop renewing, the outcome is unknown.
    if (call.lease) await call.lease.end();
  }
}
