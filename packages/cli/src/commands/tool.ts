import { randomUUID } from "node:crypto";
import { parseArgs } from "node:util";
import { connectBus } from "@geode/bus";
import { names as buildNames, type ToolExecuteReply } from "@geode/contracts";
import { createToolClient } from "@geode/runtime";
import { loadConfig } from "@geode/service";
import { type CommandModule, intOption, UsageError } from "../command.js";
import { readJsonOption } from "./json-option.js";

/** Exit code of a call that got a reply but did not complete (blocked, denied, failed, …). */
const NOT_COMPLETED_EXIT = 3;

/**
 * `geode tool call <tool> --args JSON|@file [--key K] [--session ID] [--timeout ms] [--json]`: one
 * call through the tool-executor's whole boundary, as a runtime makes it.
 */
export const toolCallCommand: CommandModule = {
  async run(args, io) {
    const { values, positionals } = parseArgs({
      args,
      allowPositionals: true,
      options: {
        args: { type: "string", default: "{}" },
        key: { type: "string" },
        session: { type: "string" },
        timeout: { type: "string" },
        json: { type: "boolean", default: false },
      },
    });
    const [tool, ...extra] = positionals;
    if (tool === undefined || extra.length > 0) throw new UsageError("give one tool name");
    const toolArgs = await readJsonOption(values.args, "args");
    const timeoutMs = intOption(values.timeout, "timeout");
    const config = loadConfig(io.env);
    const nc = await connectBus(config, "geode-tool-call");
    try {
      const tools = createToolClient({ nc, names: buildNames(config.namespace) });
      const reply = await tools.execute(
        {
          tool_name: tool,
          arguments: toolArgs,
          correlation: {
            session_id: values.session ?? `cli-${randomUUID()}`,
            tool_call_id: `call-${randomUUID()}`,
          },
          ...(values.key === undefined ? {} : { operation_key: values.key }),
        },
        timeoutMs === undefined ? {} : { timeoutMs },
      );
      io.out(values.json ? `${JSON.stringify(reply, null, 2)}\n` : replyText(tool, reply));
      return reply.status === "completed" || reply.status === "replayed" ? 0 : NOT_COMPLETED_EXIT;
    } finally {
      await nc.close();
    }
  },
};

/** The reply for people: status first, then what it returned and why. */
function replyText(tool: string, reply: ToolExecuteReply): string {
  const lines = [
    `${tool}: ${reply.status}${reply.executed ? "" : " (not executed)"}${reply.has_error ? ", error result" : ""}`,
  ];
  if (reply.reason !== "") lines.push(`reason: ${reply.reason}`);
  lines.push(`result: ${JSON.stringify(reply.result)}`);
  for (const c of reply.additional_context) lines.push(`context: ${c}`);
  if (reply.receipt) lines.push(`receipt: ${reply.receipt.key} (${reply.receipt.state})`);
  return `${lines.join("\n")}\n`;
}
