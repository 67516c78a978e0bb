import { type BusConnection, busParts, type Logger } from "@geode/bus";
import { type HookEnvelope, HookName, type Names } from "@geode/contracts";
import { type HookAnswer, type HookCall, type ServedHook, serveHookAnswers } from "@geode/handler";
import {
  type CallerIdentity,
  isPolicyHook,
  POLICY_HOOKS,
  policyAnswer,
  registeredToolApplies,
  schemaText,
} from "@geode/policy";
import { NO_OBSERVER, type RunningService, type ServiceHealth, type ServiceObserver } from "@geode/service";
import { AgentStore, PolicyStore, SessionStore, ToolStore } from "@geode/state";
import { CallerDirectory } from "./caller-directory.js";
import { McpToolDirectory } from "./mcp-tool-directory.js";
import { PolicyLoader } from "./policy-loader.js";

/** The handler name, priority and failure mode of DESIGN section 17. */
const POLICY_HANDLER = { name: "policy", priority: 10, failureMode: "closed" } as const;

export interface PolicyGuardOptions {
  /** The connection, with the interceptors its doors run (a service's `ServiceContext.bus`). */
  nc: BusConnection;
  names: Names;
  log: Logger;
  /** Where its decision counts go (a service's `ServiceContext.observer`; default none). */
  observer?: ServiceObserver;
  /** The schema's text; default the shipped `policies/geode.cedarschema`. */
  schema?: string;
  /** Registration lease, ms (tests shorten it). */
  leaseMs?: number;
}

export interface PolicyGuard extends RunningService {
  readonly loader: PolicyLoader;
}

/**
 * The policy-guard: loads the policy sets of KV `{ns}_policies` (and follows them), and answers
 * PreToolUse, PermissionRequest, UserPromptSubmit and PostToolUse as the handler `policy`
 * (priority 10, `failure_mode: closed`; replicas share the queue group `policy`). Each call is
 * evaluated against every loaded set, with the MCP tools the mcp-bridge registered in KV
 * `{ns}_tools` known as MCP tools; see `policyAnswer` for what it returns.
 */
export async function startPolicyGuard(options: PolicyGuardOptions): Promise<PolicyGuard> {
  const { names, log } = options;
  const observer = options.observer ?? NO_OBSERVER;
  const conn = { ...busParts(options.nc), names };
  const loader = new PolicyLoader(await PolicyStore.open(conn), options.schema ?? schemaText(), log);
  await loader.start();
  const callers = new CallerDirectory(await SessionStore.open(conn), await AgentStore.open(conn));
  const mcpTools = await McpToolDirectory.open(await ToolStore.open(conn), log);

  /** The registered MCP origin of the call's tool, looked up only where it would apply. */
  const registeredOf = async (payload: Record<string, unknown>, caller: CallerIdentity) => {
    const tool = payload["tool_name"];
    if (typeof tool !== "string" || !registeredToolApplies(caller, tool)) return undefined;
    return mcpTools.origin(tool);
  };

  const answer = async (envelope: HookEnvelope, call: HookCall): Promise<HookAnswer> => {
    const hook = envelope.name;
    if (!isPolicyHook(hook)) return { decision: null };
    const caller = await callers.of(envelope.correlation.session_id);
    const evaluation = loader.engine.evaluate(
      hook,
      envelope.payload,
      envelope.correlation.session_id,
      caller,
      {
        guarded: call.guardedArguments,
        registered:
          hook === HookName.UserPromptSubmit ? undefined : await registeredOf(envelope.payload, caller),
      },
    );
    if (evaluation.errors.length > 0)
      log.warn({ hook, policies: evaluation.errors }, "policies failed to evaluate and were skipped");
    const { enforce, audit } = evaluation;
    const [decision, mode] =
      enforce.action !== null
        ? [enforce.action, "enforce"]
        : audit.action !== null
          ? [audit.action, "audit"]
          : ["none", "none"];
    observer.policyDecision(hook, decision, mode);
    return policyAnswer(evaluation);
  };

  const served: ServedHook[] = [];
  try {
    for (const hook of POLICY_HOOKS)
      served.push(
        await serveHookAnswers(
          conn,
          hook,
          { ...POLICY_HANDLER, log, ...(options.leaseMs ? { leaseMs: options.leaseMs } : {}) },
          answer,
        ),
      );
  } catch (err) {
    await Promise.all(served.map((s) => s.close()));
    await mcpTools.stop();
    await loader.stop();
    throw err;
  }
  return {
    loader,
    health(): ServiceHealth {
      return { status: "ok" };
    },
    async stop() {
      await Promise.all(served.map((s) => s.close()));
      await mcpTools.stop();
      await loader.stop();
    },
  };
}
