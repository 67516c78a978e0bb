import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { type ActivityRecorder, startActivityRecorder } from "@geode/activity-recorder";
import { type AgentGateway, startAgentGateway } from "@geode/agent-gateway";
import { requestJson } from "@geode/bus";
import { type RunningConsole, startConsole } from "@geode/console";
import { CLAUDE_CODE_HOOK_PATH, type ToolExecuteReply } from "@geode/contracts";
import { openProjectionDb, type ProjectionDb } from "@geode/projection";
import { createVerifyClient, type VerifyClient } from "@geode/runtime";
import { HandlerRegistrations } from "@geode/state";
import { type TestEnv, waitFor } from "@geode/testing";
import { type RunningVerifier, startVerifier } from "@geode/verifier";
import { expect } from "vitest";
import { addAgent, ccInput } from "./gateway-support.js";
import { type RecordingTool, recordingTool, startToolStack, type ToolStack } from "./tools-support.js";

/** A JSON reply of the API; the tests check it field by field. */
// biome-ignore lint/suspicious/noExplicitAny: replies are asserted on with expect(), field by field
export type ApiBody = any;

export const CONSOLE_TOKEN = "console-test-token-0123456789";

/** GET `route` of the console at `url` as the operator: asserts a 200 and returns the body. */
export async function consoleGet<T>(url: string, route: string): Promise<T> {
  const res = await fetch(`${url}${route}`, { headers: { authorization: `Bearer ${CONSOLE_TOKEN}` } });
  expect(res.status, route).toBe(200);
  return (await res.json()) as T;
}

/**
 * A dispatcher, tool-executor (with `deploy`, which needs approval, and `shell.*` on its deny list), verifier, activity-recorder,
 * agent gateway (with the agent `laptop`) and console, reading the projection, in this process.
 */
export interface ConsolePlane {
  env: TestEnv;
  tools: ToolStack;
  deploy: RecordingTool;
  verifier: RunningVerifier;
  verify: VerifyClient;
  recorder: ActivityRecorder;
  /** The recorder's `GEODE_RUNS_DIR` (each run's events.jsonl). */
  runsDir: string;
  projection: ProjectionDb;
  gateway: AgentGateway;
  console: RunningConsole;
  /** POSTs a Claude Code hook input to the gateway as the agent `laptop`; resolves with its JSON reply. */
  claudeCode(body: Record<string, unknown>): Promise<Record<string, unknown>>;
  /** Calls the API with the bearer token (or `token: null` for none); returns status and JSON. */
  api(
    path: string,
    init?: { method?: string; body?: unknown; token?: string | null; headers?: Record<string, string> },
  ): Promise<{ status: number; body: ApiBody; headers: Headers }>;
  /** Starts a tool call through the executor (it resolves once the call ends). */
  callTool(
    tool: string,
    args: Record<string, unknown>,
    correlation: Record<string, unknown>,
  ): Promise<ToolExecuteReply>;
  stop(): Promise<void>;
}

export async function startConsolePlane(env: TestEnv): Promise<ConsolePlane> {
  const { nc, names, databaseUrl } = env;
  const deploy = recordingTool("deploy", "mutation", { requires_approval: true });
  const tools = await startToolStack(env, {
    tools: [deploy],
    config: { approvalTimeoutMs: 30_000, deny: ["shell.*"] },
  });
  const verifier = await startVerifier({ nc, names });
  const runsDir = mkdtempSync(path.join(os.tmpdir(), "geode-console-runs-"));
  const recorder = await startActivityRecorder({ nc, names, databaseUrl, runsDir });
  const projection = await openProjectionDb({ ns: env.ns, databaseUrl });
  const agentToken = await addAgent(env, "laptop");
  const gateway = await startAgentGateway({
    nc,
    names,
    config: { host: "127.0.0.1", port: 0, approvalTimeoutMs: 30_000 },
  });
  await waitFor(() => gateway.agents() === 1);
  const running = await startConsole({
    conn: { nc, names },
    token: CONSOLE_TOKEN,
    port: 0,
    approvalTimeoutMs: 30_000,
    projection: { db: projection.db, ns: projection.ns },
  });
  return {
    env,
    tools,
    deploy,
    verifier,
    verify: createVerifyClient({ nc, names }),
    recorder,
    runsDir,
    projection,
    gateway,
    console: running,
    async claudeCode(body) {
      const res = await fetch(`${gateway.url}${CLAUDE_CODE_HOOK_PATH}`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${agentToken}` },
        body: JSON.stringify(body),
      });
      if (res.status !== 200) throw new Error(`the gateway answered ${res.status}`);
      return (await res.json()) as Record<string, unknown>;
    },
    async api(path, init = {}) {
      const token = init.token === undefined ? CONSOLE_TOKEN : init.token;
      const headers: Record<string, string> = { ...init.headers };
      if (token !== null) headers["authorization"] = `Bearer ${token}`;
      if (init.body !== undefined) headers["content-type"] ??= "application/json";
      const res = await fetch(`${running.url}${path}`, {
        method: init.method ?? (init.body === undefined ? "GET" : "POST"),
        headers,
        ...(init.body === undefined
          ? {}
          : { body: typeof init.body === "string" ? init.body : JSON.stringify(init.body) }),
      });
      const text = await res.text();
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {}
      return { status: res.status, body, headers: res.headers };
    },
    callTool(tool, args, correlation) {
      return requestJson(
        env.nc,
        env.names.toolExecute,
        { tool_name: tool, arguments: args, correlation },
        { timeoutMs: 60_000 },
      ) as Promise<ToolExecuteReply>;
    },
    async stop() {
      await running.close();
      await gateway.stop();
      await recorder.stop();
      await projection.close();
      await verifier.stop();
      await tools.stop();
      rmSync(runsDir, { recursive: true, force: true });
    },
  };
}

/** A PreToolUse guard that blocks any command containing `rm -rf` (and says nothing of the rest). */
export function serveDiskGuard(p: ConsolePlane) {
  return p.tools.hook("PreToolUse", { name: "disk-guard", priority: 1 }, (e) =>
    String((e.payload["arguments"] as { command?: unknown }).command ?? "").includes("rm -rf")
      ? { action: "block", reason: "destructive command" }
      : null,
  );
}

/** Secrets planted in the refused command: they must be masked wherever the command shows. */
export const PLANTED_SECRETS = ["hunter2-planted-pw", "sk-live-0123456789abcdefghij"];
/** The refused command as the agent sends it (with the planted secrets). */
const RM_COMMAND = `rm -rf /tmp/x --password=${PLANTED_SECRETS[0]} && echo ${PLANTED_SECRETS[1]}`;
/** The same command as the story shows it: secrets masked. */
export const RM_TARGET = "rm -rf /tmp/x --password=[REDACTED] && echo [REDACTED]";
/** A prompt the prompt guard blocks (its text must never come back either). */
export const SHIP_PROMPT = "ship it now, the key is under the mat";

/**
 * Besides the disk guard: a PermissionRequest guard that denies writes under /etc, and a
 * UserPromptSubmit guard that blocks prompts asking to ship, each with its reason.
 */
export async function serveRefusalGuards(p: ConsolePlane) {
  await p.tools.hook("PermissionRequest", { name: "etc-guard", priority: 1 }, (e) =>
    String(e.payload["detail"] ?? "").includes("/etc/")
      ? { action: "deny", reason: "no writes under /etc" }
      : null,
  );
  await p.tools.hook("UserPromptSubmit", { name: "ship-guard", priority: 1 }, (e) =>
    String(e.payload["user_input"] ?? "").includes("ship it")
      ? { action: "block", reason: "shipping needs a release ticket" }
      : null,
  );
}

/**
 * A Claude Code session through the gateway, as Claude Code sends its hooks: a prompt, an allowed
 * `ls`, then (if `blocked`) an `rm -rf` the disk guard refuses, then (if `refusals`) a Write to
 * /etc/hosts the etc guard denies at its permission prompt and a second prompt the ship guard
 * blocks, then (if `end`) its end.
 */
export async function claudeCodeSession(
  p: ConsolePlane,
  sessionId: string,
  opts: { prompt: string; blocked: boolean; end: boolean; refusals?: boolean },
): Promise<void> {
  const session = { session_id: sessionId, prompt_id: `${sessionId}-p1` };
  await p.claudeCode(ccInput("SessionStart", { source: "startup", model: "claude-test" }, session));
  await p.claudeCode(ccInput("UserPromptSubmit", { prompt: opts.prompt }, session));
  const ls = { tool_name: "Bash", tool_input: { command: "ls -la" }, tool_use_id: `${sessionId}-t1` };
  if (JSON.stringify(await p.claudeCode(ccInput("PreToolUse", ls, session))) !== "{}")
    throw new Error("the gateway refused ls");
  await p.claudeCode(ccInput("PostToolUse", { ...ls, tool_response: { stdout: "a", stderr: "" } }, session));
  if (opts.blocked) {
    const rm = {
      tool_name: "Bash",
      tool_input: { command: RM_COMMAND },
      tool_use_id: `${sessionId}-t2`,
    };
    const denied = await p.claudeCode(ccInput("PreToolUse", rm, session));
    const out = denied["hookSpecificOutput"] as { permissionDecision?: string } | undefined;
    if (out?.permissionDecision !== "deny")
      throw new Error(`the gateway let rm -rf go: ${JSON.stringify(denied)}`);
  }
  if (opts.refusals) await refusedSteps(p, sessionId, session);
  if (opts.end) await p.claudeCode(ccInput("SessionEnd", { reason: "other" }, session));
}

/** A Write the etc guard denies at its permission prompt, then a prompt the ship guard blocks. */
async function refusedSteps(
  p: ConsolePlane,
  sessionId: string,
  session: { session_id: string; prompt_id: string },
): Promise<void> {
  const write = {
    tool_name: "Write",
    tool_input: { file_path: "/etc/hosts", content: "127.0.0.1 x" },
    tool_use_id: `${sessionId}-t3`,
  };
  await p.claudeCode(ccInput("PreToolUse", write, session));
  const { tool_use_id: _id, ...prompt } = write;
  const asked = await p.claudeCode(ccInput("PermissionRequest", prompt, session));
  if (JSON.stringify(asked).includes('"allow"'))
    throw new Error(`the gateway let the write go: ${JSON.stringify(asked)}`);
  const shipped = await p.claudeCode(
    ccInput("UserPromptSubmit", { prompt: SHIP_PROMPT }, { ...session, prompt_id: `${sessionId}-p2` }),
  );
  if (shipped["decision"] !== "block")
    throw new Error(`the gateway let the prompt go: ${JSON.stringify(shipped)}`);
}

/** Writes a `failure_mode: closed` PreToolUse registration whose lease ran out a while ago (a dead guard). */
export async function registerDeadGuard(env: TestEnv, name: string): Promise<HandlerRegistrations> {
  const regs = await HandlerRegistrations.open({ nc: env.nc, names: env.names });
  await regs.register({
    hook: "PreToolUse",
    name,
    priority: 0,
    timeout_ms: 1000,
    failure_mode: "closed",
    schema_version: "geode.public-hook.v2",
    heartbeat_at: Date.now() - 120_000,
    lease_ms: 5000,
  });
  return regs;
}
