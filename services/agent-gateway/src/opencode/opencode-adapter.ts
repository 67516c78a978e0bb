import {
  OPENCODE_HOOK_PATH,
  type OpencodeHookInput,
  OpencodeHookInputCodec,
  type OpencodeHookOutput,
  opencodeRefusal,
} from "@geode/contracts";
import type { AgentAdapter } from "../agent-adapter.js";
import { OPENCODE_HANDLERS, parentOf, recordOnlyEvent } from "./opencode-events.js";

/**
 * opencode (docs/opencode.md): the plugin `@geode/opencode-plugin` posts one body of its own per
 * hook or session event; `session_id` and `run_id` = opencode's session id (a sub-agent session's
 * start and end: its parent's), `turn_id` = the message id of a prompt, `tool_call_id` =
 * opencode's `callID`.
 */
export const opencodeAdapter: AgentAdapter<OpencodeHookInput, OpencodeHookOutput> = {
  kind: "opencode",
  path: OPENCODE_HOOK_PATH,
  provider: "opencode",
  parse: (body) => OpencodeHookInputCodec.decode(body),
  eventOf: (input) => input.event,
  ids: (input) => ({
    session_id: parentOf(input) ?? input.session_id,
    turn_id: typeof input["message_id"] === "string" ? input["message_id"] : undefined,
    tool_call_id: typeof input["call_id"] === "string" ? input["call_id"] : undefined,
    model: input.model,
  }),
  startsSession: (input) => input.event === "session.created" && parentOf(input) === undefined,
  handle: (call, input) => (OPENCODE_HANDLERS.get(input.event) ?? recordOnlyEvent)(call, input),
  unavailable: (event, message) =>
    opencodeRefusal(
      event,
      `geode: the extension plane could not decide (${message}); a guarded call is refused`,
    ),
};
