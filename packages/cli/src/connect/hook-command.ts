/** `'…'` for a POSIX shell. */
export const shellQuote = (s: string): string => `'${s.replaceAll("'", `'\\''`)}'`;

/** The environment variable the agent's hook commands read their gateway token from. */
export const TOKEN_ENV = "GEODE_AGENT_TOKEN";

interface HookCommandOptions {
  /** The gateway's endpoint for this agent (`http://127.0.0.1:4280/v1/codex/hook`). */
  endpoint: string;
  /**
   * A guarded event of a fail-closed set-up: when the gateway cannot be reached or answers an
   * error, the command exits 2 with the reason on stderr, which the agents read as a refusal.
   * Otherwise it exits 1, which they read as "go on" (and show as a warning).
   */
  failClosed: boolean;
  /** How long one call may take (the agent's own hook timeout should be a little longer). */
  timeoutSeconds: number;
  /**
   * The exit code that means "go on" to the agent when the gateway cannot answer and the hook is
   * not fail-closed: 1 by default; 0 for Copilot CLI, which reads exit 1 as a refusal.
   */
  openExit?: 0 | 1;
  /**
   * For a fail-closed hook: the agent's refusal JSON for a reason, printed on stdout before exit 2
   * (Copilot CLI reads exit 2 alone as a refusal of a tool call but not of a prompt).
   */
  refusal?: (reason: string) => string;
}

/** What a hook says when the gateway answers 401: the token is refused, not the gateway down. */
export const TOKEN_REFUSED = "geode: the gateway refused the agent token (401)";

/** The reasons a hook gives on stderr (and in a refusal) when the gateway does not answer 200. */
function failureReasons(failClosed: boolean): { refused: string; unanswered: string } {
  const then = failClosed ? "a guarded call is refused" : "going on ungoverned";
  return {
    refused: `${TOKEN_REFUSED}: check ${TOKEN_ENV} (geode agents ls); ${then}`,
    unanswered: `geode: the agent gateway could not answer; ${then}`,
  };
}

/**
 * The command hook an agent runs for each of its hook calls: one `curl` that POSTs the hook input
 * (stdin) to the gateway with the agent's bearer token and prints the gateway's answer, which is
 * already in the agent's own output format (its refusals included). A shell and curl start in a
 * few milliseconds, where a Node process takes tens; nothing of the hook process's environment but
 * the token is sent. curl's stderr is kept (fd 3 carries its stdout past the capture) so that a 401
 * is told apart from a gateway that cannot be reached.
 */
export function hookCommand(options: HookCommandOptions): string {
  const reasons = failureReasons(options.failClosed);
  const say = (reason: string) =>
    `echo ${shellQuote(reason)} >&2${options.failClosed && options.refusal ? `; echo ${shellQuote(options.refusal(reason))}` : ""}`;
  const curl = [
    "curl -sS -f",
    `--max-time ${Math.max(1, Math.round(options.timeoutSeconds))}`,
    "-H 'content-type: application/json'",
    `-H "authorization: Bearer \${${TOKEN_ENV}:-}"`,
    "--data-binary @-",
    shellQuote(options.endpoint),
  ].join(" ");
  return [
    `{ geode_err=$(${curl} 2>&1 >&3 3>&-); } 3>&1`,
    `|| { echo "$geode_err" >&2; case $geode_err in *'error: 401'*) ${say(reasons.refused)};; *) ${say(reasons.unanswered)};; esac;`,
    `exit ${options.failClosed ? 2 : (options.openExit ?? 1)}; }`,
  ].join(" ");
}

/** True for a hook command this CLI wrote (a second `geode connect` replaces it, never doubles it). */
export function isGeodeHookCommand(command: unknown): boolean {
  return (
    typeof command === "string" &&
    (/(^|[\s'"])hook-shim(['"\s]|$)/.test(command) ||
      (/(^|geode_err=\$\()curl /.test(command) &&
        command.includes(`\${${TOKEN_ENV}:-}`) &&
        /\/v1\/[a-z-]+\/hook/.test(command)))
  );
}

/**
 * Seconds an agent should wait for one hook call: tool hooks longer than a human approval may take
 * (the gateway waits `approvalTimeoutMs` for one), Stop for a verification, the rest 30 s.
 */
export function hookTimeoutSeconds(kind: "tool" | "stop" | "other", approvalTimeoutMs: number): number {
  if (kind === "tool") return Math.ceil(approvalTimeoutMs / 1000) + 30;
  if (kind === "stop") return 120;
  return 30;
}

/**
 * Whether a hook command this CLI wrote refuses the call when the gateway cannot answer (its
 * failure branch exits 2, or the shim runs with `--fail-closed`); null for a command not ours.
 */
export function commandFailMode(command: unknown): "fail-closed" | "fail-open" | null {
  if (!isGeodeHookCommand(command)) return null;
  const c = command as string;
  return /exit 2; \}$/.test(c) || /(^|\s)--fail-closed(\s|$)/.test(c) ? "fail-closed" : "fail-open";
}

/**
 * The command of a hook the agent gives `agentTimeoutSeconds`: curl gives up a second before the
 * agent kills the hook, so the hook's own answer (its exit rule) is the one the agent reads.
 */
export function agentHookCommand(endpoint: string, failClosed: boolean, agentTimeoutSeconds: number): string {
  return hookCommand({ endpoint, failClosed, timeoutSeconds: Math.max(1, agentTimeoutSeconds - 1) });
}
