import { readFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import { connectBus } from "@geode/bus";
import {
  AgentKindSchema,
  names as buildNames,
  closedFailureAction,
  GUARDED_INPUT_TOO_LARGE,
  guardedArguments,
  HookName,
  type McpToolOrigin,
  registeredMcpOrigin,
  validateHookPayload,
} from "@geode/contracts";
import {
  type CallerIdentity,
  type CompiledSet,
  isPolicyHook,
  POLICY_HOOKS,
  PolicyEngine,
  type PolicyHook,
  type PolicyTestResult,
  policyTestResult,
  registeredToolApplies,
} from "@geode/policy";
import { loadConfig } from "@geode/service";
import { AgentStore, PolicyStore, ToolStore } from "@geode/state";
import { type CommandIO, type CommandModule, UsageError } from "../command.js";
import { readJsonOption } from "./json-option.js";
import { packOrRefuse, refusedLine, setsInForce } from "./policy.js";
import { checkOrExplain } from "./policy-check.js";
import { invokeLive, liveText } from "./policy-live.js";

/** Exit code of a result that blocks or denies, as `geode hook invoke` has it. */
const BLOCKED_EXIT = 3;

/**
 * The stored sets (each checked as the guard checks it), the agent's groups from KV, and the MCP
 * origin of the payload's tool when the mcp-bridge registered it (`tool`, given only where the
 * guard would look it up).
 */
async function storedSets(
  io: CommandIO,
  agent: string | undefined,
  tool: string | undefined,
): Promise<{ sets: CompiledSet[]; groups: string[]; registered: McpToolOrigin | undefined }> {
  const config = loadConfig(io.env);
  const nc = await connectBus(config, "geode-policy-test");
  try {
    const conn = { nc, names: buildNames(config.namespace) };
    // What the guard enforces: each set's last good version, a refused newer value named.
    const sets = (await setsInForce(await PolicyStore.open(conn))).flatMap((s) => {
      if (s.refused) io.err(`policy set ${s.key}: ${refusedLine(s)}\n`);
      return s.enforced ? [s.enforced.set] : [];
    });
    const record = agent ? await (await AgentStore.open(conn)).get(agent) : null;
    const definition = tool === undefined ? null : await (await ToolStore.open(conn)).get(tool);
    return {
      sets,
      groups: record?.groups ?? [],
      registered: definition ? registeredMcpOrigin(definition) : undefined,
    };
  } finally {
    await nc.close();
  }
}

/**
 * One call evaluated as the plane evaluates it: the payload sanitized and checked as the
 * dispatcher does (an invalid one is refused, as `--live` is), its guarded fields taken from the
 * whole input, and a call a guard could not see whole refused, as the guard's hook refuses it.
 */
function evaluateAsThePlane(
  engine: PolicyEngine,
  hook: PolicyHook,
  raw: unknown,
  session: string,
  caller: CallerIdentity,
  registered: McpToolOrigin | undefined,
): PolicyTestResult {
  const checked = validateHookPayload(hook, raw);
  if (!checked.ok) throw new UsageError(`--payload is not a valid ${hook} payload: ${checked.error}`);
  const tool = checked.payload["tool_name"];
  const input = raw !== null && typeof raw === "object" ? (raw as Record<string, unknown>) : {};
  const guarded =
    typeof tool === "string" && hook !== HookName.UserPromptSubmit
      ? guardedArguments(tool, input["arguments"])
      : { arguments: {}, oversize: [] };
  if (guarded.oversize.length > 0 && hook !== HookName.PostToolUse)
    return {
      blocked: true,
      decision: closedFailureAction(hook),
      policies: [],
      reason: GUARDED_INPUT_TOO_LARGE,
    };
  return policyTestResult(
    engine.evaluate(hook, checked.payload, session, caller, { guarded: guarded.arguments, registered }),
  );
}

/** What `--live` cannot be combined with, and why. */
function refuseWithLive(values: Record<string, unknown>): void {
  if (values["pack"] !== undefined || values["file"] !== undefined)
    throw new UsageError(
      "--live asks the running guard, which evaluates the stored sets: drop --pack/--file",
    );
  if (values["group"] !== undefined)
    throw new UsageError(
      "--live: the guard takes the agent's groups from its record ('geode agents add NAME --group G'), not from the caller",
    );
  if (values["session"] !== undefined)
    throw new UsageError("--live invokes in a probe session of its own: drop --session");
  if (values["agent-kind"] !== undefined && values["agent"] === undefined)
    throw new UsageError("--live: --agent-kind needs --agent (a runtime's session has no agent kind)");
}

/**
 * `geode policy test [--pack PACK | --file FILE] --hook H --payload JSON [--agent A] [--group G]…
 * [--agent-kind K] [--session ID] [--json]`: evaluates one hook call locally against a pack or a
 * file (no plane needed; enforced) or else against the stored sets (their own modes), and prints
 * the decision, the deciding policies and the reason; exit 3 when the result blocks or denies.
 * `--live [--agent A [--agent-kind K]]` invokes it through the running plane instead (see
 * `invokeLive`): the outcome, the `policy` handler's decision and its deciding policies.
 */
export const policyTestCommand: CommandModule = {
  async run(args, io) {
    const { values } = parseArgs({
      args,
      options: {
        pack: { type: "string" },
        file: { type: "string" },
        hook: { type: "string" },
        payload: { type: "string" },
        agent: { type: "string" },
        group: { type: "string", multiple: true },
        "agent-kind": { type: "string" },
        session: { type: "string" },
        json: { type: "boolean", default: false },
        live: { type: "boolean", default: false },
      },
    });
    if (values.live) refuseWithLive(values);
    if (values.pack !== undefined && values.file !== undefined)
      throw new UsageError("give --pack or --file, not both");
    const hook = values.hook;
    if (hook === undefined || !isPolicyHook(hook))
      throw new UsageError(`--hook is one of ${POLICY_HOOKS.join(", ")}`);
    if (values.payload === undefined) throw new UsageError("--payload is required (JSON, or @file)");
    const payload = await readJsonOption(values.payload, "payload");
    const kind =
      values["agent-kind"] === undefined ? undefined : AgentKindSchema.safeParse(values["agent-kind"]);
    if (kind && !kind.success)
      throw new UsageError(`--agent-kind is one of ${AgentKindSchema.options.join(", ")}`);
    if (values.live) {
      const live = await invokeLive(io, { hook, payload, agent: values.agent, agentKind: kind?.data });
      if (!live) return 1;
      io.out(values.json ? `${JSON.stringify(live.result)}\n` : liveText(live));
      return live.result.blocked ? BLOCKED_EXIT : 0;
    }
    let sets: CompiledSet[];
    let groups = values.group ?? [];
    let registered: McpToolOrigin | undefined;
    const caller: CallerIdentity = { agent: values.agent ?? "runtime", agentKind: kind?.data, groups };
    if (values.pack !== undefined || values.file !== undefined) {
      const name = values.pack ?? "file";
      const text =
        values.pack !== undefined
          ? packOrRefuse(values.pack)
          : await readFile(values.file as string, "utf8").catch((err: Error) => {
              throw new UsageError(`${values.file}: ${err.message}`);
            });
      const compiled = checkOrExplain(name, text, "enforce", io);
      if (!compiled) return 1;
      sets = [compiled];
    } else {
      const tool = (payload as { tool_name?: unknown } | null)?.tool_name;
      const lookup =
        typeof tool === "string" && hook !== HookName.UserPromptSubmit && registeredToolApplies(caller, tool)
          ? tool
          : undefined;
      const stored = await storedSets(io, values.agent, lookup);
      sets = stored.sets;
      registered = stored.registered;
      if (groups.length === 0) groups = stored.groups;
    }
    const result = evaluateAsThePlane(
      new PolicyEngine(sets),
      hook,
      payload,
      values.session ?? "",
      { ...caller, groups },
      registered,
    );
    if (values.json) io.out(`${JSON.stringify(result)}\n`);
    else
      io.out(
        `decision: ${result.decision ?? "none"}\npolicies: ${result.policies.join(", ") || "-"}\nreason: ${result.reason || "-"}\n`,
      );
    return result.blocked ? BLOCKED_EXIT : 0;
  },
};
