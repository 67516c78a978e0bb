import { type AgentCheckReport, AgentCheckReportCodec, agentCheckPath } from "@geode/contracts";
import { type HookMode, modesReport } from "./fail-mode.js";
import { TOKEN_ENV } from "./hook-command.js";

/**
 * Whether an agent's hooks will get through to the gateway: `/healthz` answers, and the token in
 * `GEODE_AGENT_TOKEN` is known (an empty POST to the agent's endpoint: a known token gets 400 for
 * the empty body, which invokes nothing; an unknown one 401). Null when both hold, else the one
 * line that says what is wrong.
 */
export async function gatewayProblem(
  endpoint: string,
  env: NodeJS.ProcessEnv,
  probe: { body: string; headers?: Record<string, string> } = { body: "{}" },
): Promise<string | null> {
  const url = new URL(endpoint);
  const health = new URL("/healthz", url);
  try {
    const res = await fetch(health, { signal: AbortSignal.timeout(5_000) });
    if (res.status !== 200)
      return `the agent gateway at ${url.origin} is not healthy (HTTP ${res.status} on /healthz)`;
  } catch (err) {
    const why =
      (err as { cause?: { code?: string } }).cause?.code ?? (err instanceof Error ? err.message : "");
    return `the agent gateway at ${url.origin} cannot be reached (${why}): start it (geode up) or pass --url`;
  }
  const token = env[TOKEN_ENV];
  if (!token)
    return `${TOKEN_ENV} is not set: the hooks would send no token (geode agents add NAME prints one)`;
  const res = await fetch(url, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", ...probe.headers },
    body: probe.body,
    signal: AbortSignal.timeout(5_000),
  });
  await res.body?.cancel();
  if (res.status === 401)
    return `the gateway does not know the token in ${TOKEN_ENV} (geode agents ls; geode agents add NAME)`;
  if (res.status === 403)
    return `the gateway refuses the Host or Origin of ${url.origin} (HTTP 403): use the gateway's own address`;
  if (res.status !== 400 && res.status !== 200)
    return `the gateway answered HTTP ${res.status} at ${url.pathname}`;
  return null;
}

/**
 * What an agent-side `--check` found: the one line that says what is wrong, or what is in order
 * and the fail mode of each guarded hook.
 */
export type AgentCheck = { problem: string } | { ok: string; modes: HookMode[] };

/**
 * How every `geode connect <agent> --check` ends: the agent side's problem, else the gateway's,
 * on stderr with exit 1; else one `ok:` line naming both sides, exit 0. The guarded hooks' fail
 * modes follow on stdout whenever the agent side was found in order.
 */
export async function reportCheck(
  endpoint: string,
  io: { out(s: string): void; err(s: string): void; env: NodeJS.ProcessEnv },
  agentSide: AgentCheck,
): Promise<number> {
  const problem = "problem" in agentSide ? agentSide.problem : await gatewayProblem(endpoint, io.env);
  const modes = "modes" in agentSide ? modesReport(agentSide.modes) : "";
  const ok = `ok: ${(agentSide as { ok: string }).ok}; the gateway at ${new URL(endpoint).origin} knows the token`;
  await recordCheck(
    endpoint,
    io.env,
    problem === null ? { ok: true, detail: ok } : { ok: false, detail: problem },
  );
  if (problem !== null) {
    io.err(`${problem}\n`);
    io.out(modes);
    return 1;
  }
  io.out(`${ok}\n${modes}`);
  return 0;
}

/**
 * Tells the gateway how the check ended (`POST /v1/<kind>/check` with the agent's token), so
 * `geode agents ls` and the console show each agent's last check. Best effort: a gateway that
 * cannot be reached, or does not know the token, keeps no record, and the check says so itself.
 */
export async function recordCheck(
  endpoint: string,
  env: NodeJS.ProcessEnv,
  report: AgentCheckReport,
): Promise<void> {
  const token = env[TOKEN_ENV];
  if (!token) return;
  const url = new URL(endpoint);
  url.pathname = agentCheckPath(url.pathname);
  url.search = "";
  await fetch(url, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(AgentCheckReportCodec.encode(report)),
    signal: AbortSignal.timeout(5_000),
  }).then(
    (res) => res.body?.cancel(),
    () => undefined,
  );
}
