/**
 * The plane a real agent CLI is governed through in a test file: a hook-dispatcher, the verifier,
 * the recorder (Postgres and run files), the agent gateway on a free port, and one agent added
 * with `geode agents add` (its token), all on the file's own namespace.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { type ActivityRecorder, startActivityRecorder } from "@geode/activity-recorder";
import { type AgentGateway, startAgentGateway } from "@geode/agent-gateway";
import { runCliCaptured } from "@geode/cli/testing";
import type { HookEnvelope } from "@geode/contracts";
import type { HookDispatcher } from "@geode/hook-dispatcher";
import { type TestEnv, useTestEnv, waitFor } from "@geode/testing";
import { type RunningVerifier, startVerifier } from "@geode/verifier";
import pg from "pg";
import { afterAll, afterEach, beforeAll, expect } from "vitest";
import { HandlerScope, startDispatcher } from "./hooks-support.js";

export interface AgentPlane {
  env: () => TestEnv;
  /** Runs the `geode` CLI in this process, on the file's namespace, with `extra` in its environment. */
  geode(args: string[], extra?: Record<string, string>): ReturnType<typeof runCliCaptured>;
  gateway(): AgentGateway;
  /** Handlers served for the current test (closed after it). */
  scope(): HandlerScope;
  /** The agent's token (`geode agents add`). */
  token(): string;
  /** Where the recorder writes each run's JSONL. */
  runsDir(): string;
  /** Run after the current test, last added first. */
  cleanups: Array<() => void | Promise<void>>;
  /**
   * Checks what the plane recorded of one ended session of the agent (or, `ended: false`, one
   * that ends without telling): `session_started` in
   * Postgres with `started`'s fields, a PreToolUse audit row of handler `extension`, the run's
   * JSONL, and the agent kind in `geode agents ls`, `geode audit` and `geode events tail`.
   */
  expectRecordedSession(
    sessionId: string,
    expected: {
      agentKind: string;
      extension: string;
      started: Record<string, unknown>;
      /** False for an agent that sends no session end headless (Qwen Code): the session stays open. */
      ended?: boolean;
    },
  ): Promise<void>;
}

/** How a test runs one agent session through the plane's gateway. */
export interface AgentSessionOptions {
  /** The gateway URL the hooks call (default the plane's). */
  url?: string;
  /** More `geode connect` flags. */
  flags?: string[];
  /** The agent's token (default the plane's agent's). */
  token?: string;
  prompt?: string;
  /** Called with the working folder before the agent starts (to put files in it). */
  prepare?: (work: string) => void;
}

/** Sets up the plane for the file (`beforeAll`), with one agent named `agentName`. */
export function useAgentPlane(agentName: string): AgentPlane {
  const env = useTestEnv();
  let dispatcher: HookDispatcher | undefined;
  let verifier: RunningVerifier | undefined;
  let recorder: ActivityRecorder | undefined;
  let gateway: AgentGateway | undefined;
  let scope: HandlerScope | undefined;
  let token = "";
  let runsDir = "";
  const cleanups: Array<() => void | Promise<void>> = [];
  const geode = (args: string[], extra: Record<string, string> = {}) =>
    runCliCaptured(args, { ...process.env, ...env().env, ...extra });
  const ready = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error("the agent plane is not ready: use it inside a test");
    return value;
  };

  beforeAll(async () => {
    const { nc, names, databaseUrl } = env();
    runsDir = mkdtempSync(path.join(tmpdir(), "geode-agent-runs-"));
    dispatcher = await startDispatcher(env());
    verifier = await startVerifier({ nc, names });
    recorder = await startActivityRecorder({ nc, names, databaseUrl, runsDir });
    const started = await startAgentGateway({
      nc,
      names,
      config: { host: "127.0.0.1", port: 0, approvalTimeoutMs: 20_000 },
    });
    gateway = started;
    scope = new HandlerScope(env(), [dispatcher]);
    const added = await geode(["agents", "add", agentName]);
    expect(added.code, added.err).toBe(0);
    token = added.out.trimEnd().split("\n").at(-1) as string;
    await waitFor(() => started.agents() === 1);
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
    if (runsDir !== "") rmSync(runsDir, { recursive: true, force: true });
  });

  async function expectRecordedSession(
    sessionId: string,
    expected: {
      agentKind: string;
      extension: string;
      started: Record<string, unknown>;
      ended?: boolean;
    },
  ): Promise<void> {
    const db = new pg.Client({ connectionString: env().databaseUrl });
    await db.connect();
    cleanups.push(() => db.end());
    const schema = env().ns;
    const count = async (sql: string) => (await db.query(sql, [sessionId])).rows[0].n as number;
    const last = expected.ended === false ? "session.started" : "session.ended";
    await waitFor(
      async () =>
        (await count(
          `select count(*)::int as n from ${schema}.session_events where session_id = $1 and kind = '${last}'`,
        )) === 1,
      30_000,
    );
    const started = await db.query(
      `select payload from ${schema}.activity_events where session_id = $1 and event = 'session_started'`,
      [sessionId],
    );
    expect(started.rows[0].payload).toMatchObject({
      agent_kind: expected.agentKind,
      agent: agentName,
      ...expected.started,
    });
    await waitFor(
      async () =>
        (await count(
          `select count(*)::int as n from ${schema}.extension_invocations where session_id = $1 and extension = '${expected.extension}' and name = 'PreToolUse'`,
        )) > 0,
    );
    expect(readFileSync(path.join(runsDir, sessionId, "events.jsonl"), "utf8")).toContain("session_started");
    // geode agents ls: the agent's kind, sessions and audited hook calls, from the projection.
    const ls = await geode(["agents", "ls", "--json"]);
    expect(ls.code, ls.err).toBe(0);
    const mine = (JSON.parse(ls.out) as Array<Record<string, unknown>>).find((a) => a["name"] === agentName);
    expect(mine).toMatchObject({ kinds: [expected.agentKind] });
    expect(mine?.["sessions"]).toBeGreaterThanOrEqual(1);
    expect(mine?.["hook_calls"]).toBeGreaterThan(0);
    expect(mine?.["last_seen"]).toBeGreaterThan(0);
    expect((await geode(["agents", "ls"])).out).toMatch(new RegExp(`${agentName} .*${expected.agentKind}`));
    // geode audit and geode events tail name the session's agent kind.
    const audit = await geode(["audit", "--session", sessionId, "--json"]);
    expect((JSON.parse(audit.out) as Array<Record<string, unknown>>)[0]).toMatchObject({
      agent_kind: expected.agentKind,
    });
    const tail = await geode(["events", "tail", "--session", sessionId, "--from-seq", "1", "--limit", "3"]);
    expect(tail.out).toMatch(
      new RegExp(`session_started\\s+agent-gateway .*agent_kind=${expected.agentKind}`),
    );
    expect(tail.out).toMatch(
      new RegExp(`user_input_received\\s+agent-gateway .*agent_kind=${expected.agentKind}`),
    );
  }

  return {
    env,
    geode,
    expectRecordedSession,
    gateway: () => ready(gateway),
    scope: () => ready(scope),
    token: () => token,
    runsDir: () => runsDir,
    cleanups,
  };
}

/** The shell command of a tool call's hook payload (`arguments.command`), "" when it has none. */
export const shellCommandOf = (e: HookEnvelope): string =>
  String((e.payload["arguments"] as { command?: unknown }).command ?? "");

/** The folder a test's `rm -rf precious` aims at. */
const PRECIOUS = "precious";
/** The command an agent's model is scripted to run against the folder a session's `prepare` planted. */
export const RM_PRECIOUS = `rm -rf ${PRECIOUS}`;

/** Plants `precious/data.txt` in a working folder (a session's `prepare`). */
export function plantPrecious(work: string): void {
  mkdirSync(path.join(work, PRECIOUS));
  writeFileSync(path.join(work, PRECIOUS, "data.txt"), "keep me");
}

/** Whether the planted folder is still there. */
export const preciousSurvives = (work: string): boolean => existsSync(path.join(work, PRECIOUS, "data.txt"));

/**
 * `geode connect <agent>` as a user runs it, to the plane's gateway unless `url` says otherwise,
 * writing to `write` when given (else the agent's default place), with the extra `flags`, in the
 * folder `cwd` (default this process's); returns what it said.
 */
export async function runConnect(
  plane: AgentPlane,
  agent: string,
  options: {
    url?: string | undefined;
    write?: string | undefined;
    flags?: string[] | undefined;
    cwd?: string | undefined;
  },
  env: Record<string, string>,
): ReturnType<AgentPlane["geode"]> {
  const before = process.cwd();
  if (options.cwd) process.chdir(options.cwd);
  try {
    return await plane.geode(
      [
        "connect",
        agent,
        "--url",
        options.url ?? plane.gateway().url,
        ...(options.write ? ["--write", options.write] : []),
        ...(options.flags ?? []),
      ],
      env,
    );
  } finally {
    process.chdir(before);
  }
}

/** `runConnect`, which must succeed. */
export async function connectAgent(
  plane: AgentPlane,
  agent: string,
  options: Parameters<typeof runConnect>[2],
  env: Record<string, string>,
): Promise<void> {
  const r = await runConnect(plane, agent, options, env);
  expect(r.code, `${r.out}\n${r.err}`).toBe(0);
}
