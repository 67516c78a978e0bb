import { TOKEN_ENV } from "./hook-command.js";

/**
 * Whether an agent's hooks will get through to the gateway: `/healthz` answers, and the token in
 * `GEODE_AGENT_TOKEN` is known (an empty POST to the agent's endpoint: a known token gets 400 for
 * the empty body, which invokes nothing; an unknown one 401). Null when both hold, else the one
 * line that says what is wrong.
 */
export async function gatewayProblem(endpoint: string, env: NodeJS.ProcessEnv): Promise<string | null> {
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
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: "{}",
    signal: AbortSignal.timeout(5_000),
  });
  if (res.status === 401)
    return `the gateway does not know the token in ${TOKEN_ENV} (geode agents ls; geode agents add NAME)`;
  if (res.status !== 400 && res.status !== 200)
    return `the gateway answered HTTP ${res.status} at ${url.pathname}`;
  return null;
}
