/**
 * What every test of a real agent CLI shares: the agent run as a process group of its own (killed
 * whole when it overruns), and the plane it runs against (dispatcher, verifier, recorder, an
 * agent gateway in-process, and one agent's token from `geode agents add`).
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { type ActivityRecorder, startActivityRecorder } from "@geode/activity-recorder";
import { type AgentGateway, startAgentGateway } from "@geode/agent-gateway";
import { runCliCaptured } from "@geode/cli/testing";
import type { HookDispatcher } from "@geode/hook-dispatcher";
import { type TestEnv, useTestEnv, waitFor } from "@geode/testing";
import { type RunningVerifier, startVerifier } from "@geode/verifier";
import pg from "pg";
import { afterAll, afterEach, beforeAll, expect } from "vitest";
import { HandlerScope, startDispatcher } from "./hooks-support.js";

export interface AgentProcessRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `command args` detached (its own process group); kills the group after `timeoutMs`. */
export function runAgentProcess(
  command: string,
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs?: number | undefined },
): Promise<AgentProcessRun> {
  const child = spawn(command, args, {
    cwd: options.cwd,
    detached: true,
    env: options.env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (c: Buffer) => (stdout += c.toString("utf8")));
  child.stderr?.on("data", (c: Buffer) => (stderr += c.toString("utf8")));
  const timer = setTimeout(() => {
    try {
      if (child.pid) process.kill(-child.pid, "SIGKILL");
    } catch {
      // already gone
    }
  }, options.timeoutMs ?? 120_000);
  return new Promise((resolve) => {
    // "close", not "exit": stdout is complete only once every holder of the pipe is gone.
    child.once("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

export interface AgentPlane {
  env: () => TestEnv;
  gateway: () => AgentGateway;
  scope: () => HandlerScope;
  /** The agent's token, as `geode agents add` printed it. */
  token: () => string;
  /** Where the recorder writes each run's JSONL. */
  runsDir: () => string;
  /** Run after each test, last added first. */
  cleanups: Array<() => void | Promise<void>>;
  /** `geode …` in-process, with the test namespace's environment and `extra`. */
  geode(args: string[], extra?: Record<string, string>): ReturnType<typeof runCliCaptured>;
}

/** One test file's plane and agent `agentName` (a gateway with a 20 s approval timeout). */
export function useAgentPlane(agentName: string): AgentPlane {
  const env = useTestEnv();
  let dispatcher: HookDispatcher | undefined;
  let verifier: RunningVerifier | undefined;
  let recorder: ActivityRecorder | undefined;
  let gateway: AgentGateway | undefined;
  let scope: HandlerScope | undefined;
  let token = "";
  let runsDir = "";
  const cleanups: AgentPlane["cleanups"] = [];
  const geode: AgentPlane["geode"] = (args, extra = {}) =>
    runCliCaptured(args, { ...process.env, ...env().env, ...extra });
  const ready = <T>(v: T | undefined): T => {
    if (v === undefined) throw new Error("agent plane is not ready");
    return v;
  };

  beforeAll(async () => {
    const { nc, names, databaseUrl } = env();
    runsDir = mkdtempSync(path.join(tmpdir(), `geode-${agentName}-runs-`));
    dispatcher = await startDispatcher(env());
    verifier = await startVerifier({ nc, names });
    recorder = await startActivityRecorder({ nc, names, databaseUrl, runsDir });
    gateway = await startAgentGateway({
      nc,
      names,
      config: { host: "127.0.0.1", port: 0, approvalTimeoutMs: 20_000 },
    });
    scope = new HandlerScope(env(), [dispatcher]);
    const added = await geode(["agents", "add", agentName]);
    expect(added.code, added.err).toBe(0);
    token = added.out.trimEnd().split("\n").at(-1) as string;
    await waitFor(() => gateway?.agents() === 1);
  }, 120_000);

  afterEach(async () => {
    await scope?.close();
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  afterAll(async () => {
    await gateway?.stop();
    await recorder?.stop();
    await verifier?.stop();
    await dispatcher?.stop();
    rmSync(runsDir, { recursive: true, force: true });
  });

  return {
    env,
    gateway: () => ready(gateway),
    scope: () => ready(scope),
    token: () => token,
    runsDir: () => runsDir,
    cleanups,
    geode,
  };
}

/** One request the scripted model API was sent: its URL, its JSON body, its text. */
interface RecordedRequest {
  url: string;
  body: Record<string, unknown>;
  raw: string;
}

/** A scripted stand-in for a model API on loopback. */
export interface ScriptedApi {
  readonly url: string;
  readonly requests: RecordedRequest[];
  close(): Promise<void>;
}

/**
 * Serves `POST <route>` on 127.0.0.1: each request is recorded and the i-th (from 0) answered by
 * `answer(i, res)`; any other path gets 404.
 */
export async function startScriptedApi(
  route: string,
  answer: (i: number, res: ServerResponse) => void,
): Promise<ScriptedApi> {
  const requests: RecordedRequest[] = [];
  let n = 0;
  const server = createServer((req, res) => {
    let raw = "";
    req.setEncoding("utf8");
    req.on("data", (c: string) => (raw += c));
    req.on("end", () => {
      const url = req.url ?? "/";
      if (!url.startsWith(route)) {
        res.writeHead(404, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: `no route ${url}` } }));
        return;
      }
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(raw) as Record<string, unknown>;
      } catch {
        // not JSON: answered like any other request
      }
      requests.push({ url, body, raw });
      answer(n++, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * What the recorder kept of one agent session, once it ended: its `session_started` payload, its
 * audit rows (extension and hook) and its JSONL file.
 */
export async function recordedSession(
  plane: AgentPlane,
  sessionId: string,
): Promise<{
  started: Record<string, unknown>;
  audits: Array<{ extension: string; name: string }>;
  jsonl: string;
}> {
  const db = new pg.Client({ connectionString: plane.env().databaseUrl });
  await db.connect();
  try {
    const schema = plane.env().ns;
    await waitFor(async () => {
      const r = await db.query(
        `select count(*)::int as n from ${schema}.session_events where session_id = $1 and kind = 'session.ended'`,
        [sessionId],
      );
      return r.rows[0].n === 1;
    }, 30_000);
    const started = await db.query(
      `select payload from ${schema}.activity_events where session_id = $1 and event = 'session_started'`,
      [sessionId],
    );
    const audits = await db.query(
      `select extension, name from ${schema}.extension_invocations where session_id = $1`,
      [sessionId],
    );
    const jsonl = readFileSync(path.join(plane.runsDir(), sessionId, "events.jsonl"), "utf8");
    return { started: started.rows[0]?.payload ?? {}, audits: audits.rows, jsonl };
  } finally {
    await db.end();
  }
}
