import {
  AGENT_CHECK_EVENT,
  AgentCheckReportCodec,
  correlation,
  GeodeError,
  RuntimeEvent,
  sanitizeText,
} from "@geode/contracts";
import { type AnyAdapter, type HookResponse, invalidRequest } from "./agent-adapter.js";
import type { Plane } from "./plane.js";

/** A check's line is kept at most this long. */
const DETAIL_CHARS = 512;

/**
 * `POST /v1/<kind>/check`: the end of `geode connect <kind> --check`, with the agent's token. Its
 * result is recorded as `adapter_dispatch_attempt` `{adapter, hook_event_name: geode.connect.check,
 * agent, check: ok|problem, detail}` in no session, the line bounded and secret-masked; a body of
 * another shape is 400 and nothing is recorded.
 */
export function handleAgentCheck(
  adapter: AnyAdapter,
  plane: Plane,
  request: { body: unknown; agent: string },
): HookResponse<{ recorded: true }> {
  let report: { ok: boolean; detail: string };
  try {
    report = AgentCheckReportCodec.decode(request.body);
  } catch (err) {
    return invalidRequest(err instanceof GeodeError ? err.message : "not a check report");
  }
  plane.emit(
    RuntimeEvent.ADAPTER_DISPATCH_ATTEMPT,
    {
      adapter: adapter.kind,
      hook_event_name: AGENT_CHECK_EVENT,
      agent: request.agent,
      check: report.ok ? "ok" : "problem",
      detail: sanitizeText(report.detail, DETAIL_CHARS),
    },
    correlation({ session_id: "" }),
  );
  return { status: 200, body: { recorded: true } };
}
