import { randomUUID } from "node:crypto";
import { connectBus, createHookClient } from "@geode/bus";
import {
  type AgentKind,
  names as buildNames,
  type DispatchOutcome,
  ErrorCode,
  EventEnvelopeSchema,
  type ExtensionInvokedPayload,
  GeodeError,
  type Names,
} from "@geode/contracts";
import {
  type PolicyDecision,
  type PolicyHook,
  type PolicyTestResult,
  parsePolicyReason,
} from "@geode/policy";
import { loadConfig } from "@geode/service";
import { AgentStore, HandlerRegistrations, leaseExpired, SessionStore } from "@geode/state";
import type { NatsConnection } from "@nats-io/transport-node";
import type { CommandIO } from "../command.js";

/** The handler name the policy-guard registers under. */
const POLICY_HANDLER = "policy";

/**
 * How long the policy handler's audit event may trail the outcome. The dispatcher publishes it
 * ahead of its reply, so it is normally there already; this covers only a handler it never called.
 */
const AUDIT_GRACE_MS = 1_000;

interface LiveTest {
  hook: PolicyHook;
  payload: Record<string, unknown>;
  /** The gateway agent the call is made as; none: a runtime's own session (principal `runtime`). */
  agent?: string | undefined;
  agentKind?: AgentKind | undefined;
}

/** What one invocation through the running plane showed. */
interface LiveResult {
  result: PolicyTestResult;
  outcome: DispatchOutcome;
  /** The principal and groups the guard resolves for the probe session, as it resolves them. */
  principal: string;
  groups: string[];
}

/** The `policy` handler's part of an outcome, with its audit event: `geode policy test`'s result. */
function liveResult(outcome: DispatchOutcome, audit: ExtensionInvokedPayload | undefined): PolicyTestResult {
  const decided = outcome.decisions.find((d) => d.handler === POLICY_HANDLER);
  let reason = "";
  if (decided) reason = typeof decided.reason === "string" ? decided.reason : "";
  else if (audit?.status === "error") reason = `the policy handler failed (${audit.reason}) and fails closed`;
  else if (audit) reason = audit.reason;
  return {
    blocked: outcome.blocked,
    decision: (decided?.action ?? null) as PolicyDecision["action"],
    policies: audit?.status === "error" ? [] : parsePolicyReason(reason).policies,
    reason,
  };
}

/**
 * The `extension_invoked` events of the `policy` handler for one session, as they go out: the
 * dispatcher publishes a handler's audit before the step that follows it.
 */
function watchPolicyAudits(nc: NatsConnection, n: Names, sessionId: string) {
  const seen: ExtensionInvokedPayload[] = [];
  const sub = nc.subscribe(n.event("extension_invoked"), {
    callback: (err, msg) => {
      if (err) return;
      let raw: unknown;
      try {
        raw = msg.json();
      } catch {
        return; // not an event: another publisher's noise on the subject
      }
      const envelope = EventEnvelopeSchema.safeParse(raw);
      if (!envelope.success || envelope.data.correlation.session_id !== sessionId) return;
      const payload = envelope.data.payload as ExtensionInvokedPayload;
      if (payload.extension === POLICY_HANDLER) seen.push(payload);
    },
  });
  return {
    async first(): Promise<ExtensionInvokedPayload | undefined> {
      const until = Date.now() + AUDIT_GRACE_MS;
      while (seen.length === 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
      return seen[0];
    },
    close: () => sub.unsubscribe(),
  };
}

/** Why `--live` cannot ask the running guard, or null when it can (a dead lease is only noted). */
async function guardMissing(
  conn: { nc: NatsConnection; names: Names },
  hook: PolicyHook,
  io: CommandIO,
): Promise<string | null> {
  const registrations = await (await HandlerRegistrations.open(conn)).list(hook);
  const guard = registrations.find((r) => r.name === POLICY_HANDLER);
  if (!guard)
    return `no policy-guard is registered for ${hook} in namespace ${conn.names.ns}: start the plane ('geode up'), or drop --live to evaluate the stored sets locally`;
  if (leaseExpired(guard))
    io.err(
      `note: the policy handler's lease for ${hook} ran out (its guard stopped answering); it fails closed, so the dispatcher blocks\n`,
    );
  return null;
}

/**
 * Invokes the hook through the running plane (the dispatcher's chain, as `geode hook invoke` does)
 * in a probe session `policy-test-<uuid>`. The guard knows who a call comes from only by the
 * session's record in `{ns}_sessions`: with an agent, the probe session is recorded as that
 * agent's (and kind's), as the gateway records its sessions, so the guard resolves the principal and
 * the agent's groups from KV exactly as for the agent's own calls; the record is purged afterwards.
 * Without one the session has no record and the guard takes it as a runtime's (principal
 * `runtime`, no groups). Returns null, with the reason on stderr, when there is nothing to ask.
 */
export async function invokeLive(io: CommandIO, test: LiveTest): Promise<LiveResult | null> {
  const config = loadConfig(io.env);
  const nc = await connectBus(config, "geode-policy-test");
  const conn = { nc, names: buildNames(config.namespace) };
  const session = `policy-test-${randomUUID()}`;
  let sessions: SessionStore | undefined;
  try {
    const missing = await guardMissing(conn, test.hook, io);
    if (missing) {
      io.err(`${missing}\n`);
      return null;
    }
    let groups: string[] = [];
    if (test.agent !== undefined) {
      const agent = await (await AgentStore.open(conn)).get(test.agent);
      if (!agent) {
        io.err(`no agent ${test.agent} in namespace ${config.namespace} (see 'geode agents ls')\n`);
        return null;
      }
      groups = agent.groups ?? [];
      sessions = await SessionStore.open(conn);
      await sessions.create(session, {
        reason: "geode policy test --live",
        model: "",
        provider: "",
        agent: test.agent,
        ...(test.agentKind ? { agent_kind: test.agentKind } : {}),
      });
    }
    const audits = watchPolicyAudits(nc, conn.names, session);
    try {
      const outcome = await createHookClient(nc, conn.names).invoke(test.hook, test.payload as never, {
        session_id: session,
      });
      const result = liveResult(outcome, await audits.first());
      return { result, outcome, principal: test.agent ?? "runtime", groups };
    } catch (err) {
      if (!(err instanceof GeodeError && err.code === ErrorCode.Unavailable)) throw err;
      io.err(
        `no hook-dispatcher answers in namespace ${config.namespace}: start the plane ('geode up'), or drop --live to evaluate locally\n`,
      );
      return null;
    } finally {
      audits.close();
    }
  } finally {
    await sessions?.purge(session).catch(() => undefined);
    await nc.close();
  }
}

/** The live result for people: who the guard took the call for, the outcome, then as locally. */
export function liveText(live: LiveResult): string {
  const { result, outcome } = live;
  const groups = live.groups.length > 0 ? ` in groups ${live.groups.join(", ")}` : "";
  const stopper = outcome.decisions.find((d) => d.action === "block" || d.action === "deny");
  const verdict = outcome.blocked
    ? `blocked${stopper ? ` by ${stopper.handler}` : ` (a handler failed: ${outcome.handler_errors.join(", ")})`}`
    : "not blocked";
  return [
    `live: session ${outcome.correlation.session_id}, principal Geode::Agent::"${live.principal}"${groups}`,
    `outcome: ${verdict}`,
    `decision: ${result.decision ?? "none"}`,
    `policies: ${result.policies.join(", ") || "-"}`,
    `reason: ${result.reason || "-"}`,
    "",
  ].join("\n");
}
