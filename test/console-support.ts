import { requestJson } from "@geode/bus";
import { type RunningConsole, startConsole } from "@geode/console";
import type { ToolExecuteReply } from "@geode/contracts";
import { createVerifyClient, type VerifyClient } from "@geode/runtime";
import type { TestEnv } from "@geode/testing";
import { type RunningVerifier, startVerifier } from "@geode/verifier";
import { type RecordingTool, recordingTool, startToolStack, type ToolStack } from "./tools-support.js";

/** A JSON reply of the API; the tests check it field by field. */
// biome-ignore lint/suspicious/noExplicitAny: replies are asserted on with expect(), field by field
export type ApiBody = any;

export const CONSOLE_TOKEN = "console-test-token-0123456789";

/** A dispatcher, tool-executor (with `deploy`, which needs approval), verifier and console in this process. */
export interface ConsolePlane {
  env: TestEnv;
  tools: ToolStack;
  deploy: RecordingTool;
  verifier: RunningVerifier;
  verify: VerifyClient;
  console: RunningConsole;
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
  const deploy = recordingTool("deploy", "mutation", { requires_approval: true });
  const tools = await startToolStack(env, { tools: [deploy], config: { approvalTimeoutMs: 30_000 } });
  const verifier = await startVerifier({ nc: env.nc, names: env.names });
  const running = await startConsole({
    conn: { nc: env.nc, names: env.names },
    token: CONSOLE_TOKEN,
    port: 0,
    approvalTimeoutMs: 30_000,
  });
  return {
    env,
    tools,
    deploy,
    verifier,
    verify: createVerifyClient({ nc: env.nc, names: env.names }),
    console: running,
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
      await verifier.stop();
      await tools.stop();
    },
  };
}
