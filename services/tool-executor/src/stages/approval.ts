import { busParts } from "@geode/bus";
import type { ToolExecuteReply } from "@geode/contracts";
import { decidePermission, requestApproval } from "@geode/lifecycle";
import { refuse, type ToolCall } from "./tool-call.js";

/**
 * PermissionRequest / approval, when the tool requires it or PreToolUse asked for it: `allow`
 * proceeds, `deny` (or a closed guard failing) denies; no decision or `ask` goes to a human on
 * `{ns}.approval.request`, and nobody answering in time denies: a headless run fails closed.
 */
export async function approval(call: ToolCall): Promise<ToolExecuteReply | undefined> {
  const requested = call.preToolUse?.decisions.some((d) => d.action === "request_permission") ?? false;
  if (!call.definition.requires_approval && !requested) return undefined;
  const { deps, definition, correlation } = call;
  const verdict = await decidePermission(
    {
      events: deps.events,
      approve: (request, options) =>
        requestApproval({ ...busParts(deps.nc), names: deps.names }, request, {
          ...options,
          pending: (delta) => deps.observer.approvalPending(delta),
        }),
      approvalTimeoutMs: deps.config.approvalTimeoutMs,
      invoke: (payload, guarded) => call.invokeBeforeEffect("PermissionRequest", payload, guarded),
    },
    { tool_name: definition.name, safety_level: definition.effect, args: call.args, correlation },
  );
  const tool = { name: definition.name, args: call.args };
  switch (verdict.behavior) {
    case "allow":
      return undefined;
    case "deny":
      return refuse(call, "denied", verdict.reason, tool);
    case "none":
      return refuse(call, "denied", `approval denied: ${verdict.reason}`, tool);
  }
}
