// Runs once per hook call of an agent, so it stays small: node:http(s) and the standard streams,
// nothing else loaded.
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { parseArgs } from "node:util";
import type { CommandModule } from "../command.js";
import { TOKEN_ENV, TOKEN_REFUSED } from "../connect/hook-command.js";

/** The agent kinds the gateway has an endpoint for (`/v1/<kind>/hook` of the contract). */
export const SHIM_AGENTS = ["claude-code", "codex", "gemini-cli", "copilot", "qwen-code"] as const;
export type ShimAgent = (typeof SHIM_AGENTS)[number];
/** The agents `geode connect <agent> --mcp` configures for the gateway's MCP endpoint. */
export type McpAgent = ShimAgent | "opencode";
const DEFAULT_GATEWAY_URL = "http://127.0.0.1:4280";
const DEFAULT_TIMEOUT_MS = 120_000;

/**
 * The hook endpoint for `--url`: a gateway base URL gets the agent's path (`/v1/<agent>/hook`, or
 * `defaultPath`); a URL with a path is taken as given. Without one: `GEODE_GATEWAY_URL`, else
 * `GEODE_GATEWAY_ADDR`, else the default.
 */
export function hookEndpoint(
  url: string | undefined,
  env: NodeJS.ProcessEnv,
  agent: ShimAgent | "opencode" = "claude-code",
  defaultPath = `/v1/${agent}/hook`,
): string {
  let base = url ?? env["GEODE_GATEWAY_URL"];
  if (!base && env["GEODE_GATEWAY_ADDR"])
    base = `http://${env["GEODE_GATEWAY_ADDR"].replace(/^0\.0\.0\.0:/, "127.0.0.1:")}`;
  const u = new URL(base || DEFAULT_GATEWAY_URL);
  if (u.pathname === "/" || u.pathname === "") u.pathname = defaultPath;
  return u.toString();
}

/** The reason of a deny or block in a Claude Code hook output, else null. */
export function refusalOf(output: unknown): string | null {
  if (output === null || typeof output !== "object") return null;
  const o = output as Record<string, unknown>;
  const specific = o["hookSpecificOutput"] as Record<string, unknown> | undefined;
  if (specific?.["permissionDecision"] === "deny")
    return String(specific["permissionDecisionReason"] ?? "denied");
  const decision = specific?.["decision"] as Record<string, unknown> | undefined;
  if (decision?.["behavior"] === "deny") return String(decision["message"] ?? "denied");
  if (o["decision"] === "block") return String(o["reason"] ?? "blocked");
  return null;
}

export interface ShimIO {
  stdin: NodeJS.ReadableStream;
  out(text: string): void;
  err(text: string): void;
  env: NodeJS.ProcessEnv;
}

function readAll(stream: NodeJS.ReadableStream): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on("data", (c: Buffer | string) => chunks.push(typeof c === "string" ? Buffer.from(c) : c));
    stream.on("end", () => resolve(Buffer.concat(chunks)));
    stream.on("error", reject);
  });
}

function post(
  endpoint: string,
  body: Buffer,
  token: string | undefined,
  timeoutMs: number,
): Promise<{ status: number; text: string }> {
  const url = new URL(endpoint);
  const send = url.protocol === "https:" ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = send(
      url,
      {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "content-length": body.length,
          ...(token ? { authorization: `Bearer ${token}` } : {}),
        },
        timeout: timeoutMs,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () =>
          resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") }),
        );
        res.on("error", reject);
      },
    );
    req.on("timeout", () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on("error", reject);
    req.end(body);
  });
}

/**
 * `geode hook-shim [--agent A]`: a command hook that forwards its stdin (the agent's hook input)
 * to the agent gateway's endpoint for agent A (default claude-code) and prints the gateway's hook
 * output. Exit 0 with the output; for Claude Code, exit 2 with the reason on stderr when the
 * gateway denies or blocks (the other agents read their refusal from the JSON itself); when the
 * gateway cannot be reached or answers an error, exit 2 with `--fail-closed`, else exit 1 (the
 * agent goes on).
 */
export async function runHookShim(args: string[], io: ShimIO): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      url: { type: "string" },
      agent: { type: "string", default: "claude-code" },
      "fail-closed": { type: "boolean", default: false },
      "timeout-ms": { type: "string" },
    },
  });
  const agent = values.agent as ShimAgent;
  // Copilot CLI reads exit 1 as a refusal: there "go on" is exit 0 with nothing printed.
  const failCode = values["fail-closed"] ? 2 : agent === "copilot" ? 0 : 1;
  if (!SHIM_AGENTS.includes(agent)) {
    io.err(`geode hook-shim: --agent must be one of ${SHIM_AGENTS.join(", ")}\n`);
    return failCode;
  }
  const timeoutMs = values["timeout-ms"] === undefined ? DEFAULT_TIMEOUT_MS : Number(values["timeout-ms"]);
  if (!Number.isInteger(timeoutMs) || timeoutMs <= 0) {
    io.err(`geode hook-shim: --timeout-ms must be a positive integer\n`);
    return failCode;
  }
  let endpoint: string;
  try {
    endpoint = hookEndpoint(values.url, io.env, agent);
  } catch {
    io.err(`geode hook-shim: not a URL: ${values.url}\n`);
    return failCode;
  }
  const token = io.env[TOKEN_ENV];
  let input = await readAll(io.stdin);
  // Copilot's agentStop input has no answer text, only its transcript's path: the verifier needs the text.
  if (agent === "copilot" && new URL(endpoint).searchParams.get("event") === "agentStop")
    input = await (await import("../connect/copilot-transcript.js")).withAnswerText(input);
  let reply: { status: number; text: string };
  try {
    reply = await post(endpoint, input, token, timeoutMs);
  } catch (err) {
    io.err(
      `geode hook-shim: the agent gateway at ${endpoint} cannot be reached: ${err instanceof Error ? err.message : err}\n`,
    );
    return failCode;
  }
  if (reply.status === 401) {
    io.err(
      `${TOKEN_REFUSED}: ${token ? `check ${TOKEN_ENV} (geode agents ls)` : `${TOKEN_ENV} is not set`}\n`,
    );
    return failCode;
  }
  if (reply.status !== 200) {
    io.err(`geode hook-shim: the agent gateway answered ${reply.status}: ${reply.text.slice(0, 500)}\n`);
    return failCode;
  }
  let output: unknown;
  try {
    output = JSON.parse(reply.text);
  } catch {
    io.err("geode hook-shim: the agent gateway answered something other than JSON\n");
    return failCode;
  }
  const refusal = agent === "claude-code" ? refusalOf(output) : null;
  if (refusal !== null) {
    io.err(`${refusal}\n`);
    return 2;
  }
  io.out(`${JSON.stringify(output)}\n`);
  return 0;
}

export const hookShimCommand: CommandModule = {
  run: (args, io) => runHookShim(args, { stdin: process.stdin, out: io.out, err: io.err, env: io.env }),
};
