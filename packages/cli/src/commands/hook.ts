import { randomUUID } from "node:crypto";
import { parseArgs } from "node:util";
import { connectBus, createHookClient } from "@geode/bus";
import { names as buildNames, type DispatchOutcome, HOOK_NAMES, type HookName } from "@geode/contracts";
import { loadConfig } from "@geode/service";
import { type CommandModule, intOption, UsageError } from "../command.js";
import { renderTable } from "../render-table.js";
import { readJsonOption } from "./json-option.js";

/** Exit code of an invocation whose outcome is blocked. */
const BLOCKED_EXIT = 3;

/** `geode hook invoke <HookName> --payload JSON|@file [--session ID] [--timeout ms] [--json]`. */
export const hookInvokeCommand: CommandModule = {
  async run(args, io) {
    const { values, positionals } = parseArgs({
      args,
      allowPositionals: true,
      options: {
        payload: { type: "string" },
        session: { type: "string" },
        timeout: { type: "string" },
        json: { type: "boolean", default: false },
      },
    });
    const [hook, ...extra] = positionals;
    if (hook === undefined || extra.length > 0) throw new UsageError("give one hook name");
    if (!(HOOK_NAMES as readonly string[]).includes(hook))
      throw new UsageError(`unknown hook ${hook}; one of: ${HOOK_NAMES.join(", ")}`);
    if (values.payload === undefined) throw new UsageError("--payload is required (JSON, or @file)");
    const payload = await readJsonOption(values.payload, "payload");
    const timeoutMs = intOption(values.timeout, "timeout");
    const config = loadConfig(io.env);
    const nc = await connectBus(config, "geode-hook-invoke");
    try {
      const hooks = createHookClient(nc, buildNames(config.namespace));
      const session = values.session ?? `cli-${randomUUID()}`;
      const outcome = await hooks.invoke(
        hook as HookName,
        payload as never,
        { session_id: session },
        timeoutMs === undefined ? {} : { timeoutMs },
      );
      io.out(values.json ? `${JSON.stringify(outcome, null, 2)}\n` : outcomeText(outcome));
      return outcome.blocked ? BLOCKED_EXIT : 0;
    } finally {
      await nc.close();
    }
  },
};

/** The outcome for people: what was decided and by whom, then the payload as the chain left it. */
function outcomeText(outcome: DispatchOutcome): string {
  const verdict = outcome.blocked ? "blocked" : outcome.decisions.length > 0 ? "decided" : "no decision";
  const lines = [
    `${outcome.name} (session ${outcome.correlation.session_id}): ${verdict}`,
    outcome.decisions.length > 0
      ? renderTable(
          ["handler", "action", "reason"],
          outcome.decisions.map((d) => [d.handler, d.action, typeof d.reason === "string" ? d.reason : ""]),
        ).trimEnd()
      : "no handler returned a decision",
  ];
  if (outcome.handler_errors.length > 0) lines.push(`handler errors: ${outcome.handler_errors.join(", ")}`);
  lines.push(`payload after the chain: ${JSON.stringify(outcome.payload)}`);
  return `${lines.join("\n")}\n`;
}
