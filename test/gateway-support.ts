/**
 * Shared pieces of the agent gateway tests: an agent in KV, the plane's services and a gateway
 * in-process, and Claude Code hook inputs as Claude Code sends them.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { type AgentGateway, startAgentGateway } from "@geode/agent-gateway";
import { ensureBucket } from "@geode/bus";
import {
  type AgentRecord,
  names as buildNames,
  CLAUDE_CODE_HOOK_PATH,
  type EventEnvelope,
  type HookName,
  sha256,
} from "@geode/contracts";
import type { HookDispatcher } from "@geode/hook-dispatcher";
import type { HookEnvelope } from "@geode/sdk";
import { type TestEnv, useTestEnv, waitFor } from "@geode/testing";
import { type RunningVerifier, startVerifier } from "@geode/verifier";
import { afterAll, afterEach, beforeAll } from "vitest";
import { HandlerScope, startDispatcher } from "./hooks-support.js";
import { keptLogger } from "./policy-support.js";
import { eventsOf } from "./verify-support.js";

/** Writes an agent record the way `geode agents add` does; returns its token. */
export async function addAgent(env: TestEnv, name: string): Promise<string> {
  const token = `geode_${randomBytes(24).toString("base64url")}`;
  const kv = await ensureBucket(env.nc, env.names, "agents");
  const record: AgentRecord = { name, token_sha256: sha256(token), created_at: Date.now() };
  await kv.put(name, JSON.stringify(record));
  return token;
}

/** A Claude Code hook input: the common fields (with the local ones never to be forwarded) and `fields`. */
export function ccInput(
  event: string,
  fields: Record<string, unknown> = {},
  session: { session_id: string; prompt_id?: string } = { session_id: randomUUID(), prompt_id: randomUUID() },
): Record<string, unknown> {
  return {
    session_id: session.session_id,
    transcript_path: `/home/dev/.claude/projects/x/${session.session_id}.jsonl`,
    cwd: "/home/dev/secret-project",
    ...(session.prompt_id ? { prompt_id: session.prompt_id } : {}),
    permission_mode: "default",
    hook_event_name: event,
    ...fields,
  };
}

export interface GatewayFixture {
  env: () => TestEnv;
  scope: () => HandlerScope;
  gateway: () => AgentGateway;
  token: () => string;
  /** POSTs a hook input; resolves with the status and the parsed body. */
  post(
    body: unknown,
    options?: { token?: string | null; raw?: string; path?: string },
  ): Promise<{ status: number; body: unknown }>;
  /** Serves a handler for the current test that records what it saw and answers `decide`. */
  serve(
    hook: HookName,
    name: string,
    decide: (e: HookEnvelope) => unknown,
    options?: { priority?: number },
  ): Promise<HookEnvelope[]>;
  /** The runtime events of one session so far. */
  sessionEvents(sessionId: string): Promise<EventEnvelope[]>;
  /** What the gateway logged so far. */
  logLines(): Array<{ msg: string; fields: unknown }>;
}

/** One test file's plane (dispatcher, verifier), a gateway on a free port and one agent. */
export function useGatewayFixture(config: { approvalTimeoutMs?: number } = {}): GatewayFixture {
  const env = useTestEnv();
  let dispatcher: HookDispatcher | undefined;
  let verifier: RunningVerifier | undefined;
  let gateway: AgentGateway | undefined;
  let scope: HandlerScope | undefined;
  let token = "";
  const logLines: Array<{ msg: string; fields: unknown }> = [];
  beforeAll(async () => {
    const { nc, names } = env();
    dispatcher = await startDispatcher(env());
    verifier = await startVerifier({ nc, names });
    scope = new HandlerScope(env(), [dispatcher]);
    token = await addAgent(env(), "laptop");
    gateway = await startAgentGateway({
      nc,
      names,
      log: keptLogger(logLines),
      config: { host: "127.0.0.1", port: 0, approvalTimeoutMs: config.approvalTimeoutMs ?? 2_000 },
    });
    await waitFor(() => gateway?.agents() === 1);
  });
  afterEach(async () => {
    await scope?.close();
  });
  afterAll(async () => {
    await gateway?.stop();
    await verifier?.stop();
    await dispatcher?.stop();
  });
  const ready = <T>(v: T | undefined): T => {
    if (v === undefined) throw new Error("gateway fixture is not ready");
    return v;
  };
  return {
    env,
    scope: () => ready(scope),
    gateway: () => ready(gateway),
    token: () => token,
    async post(body, options = {}) {
      const t = options.token === undefined ? token : options.token;
      const res = await fetch(`${ready(gateway).url}${options.path ?? CLAUDE_CODE_HOOK_PATH}`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          ...(t === null ? {} : { authorization: `Bearer ${t}` }),
        },
        body: options.raw ?? JSON.stringify(body),
      });
      const text = await res.text();
      return { status: res.status, body: text === "" ? null : (JSON.parse(text) as unknown) };
    },
    async serve(hook, name, decide, options = {}) {
      const seen: HookEnvelope[] = [];
      await ready(scope).serve(hook, { name, ...options }, (e) => {
        seen.push(e);
        return decide(e) as never;
      });
      return seen;
    },
    logLines: () => logLines,
    async sessionEvents(sessionId) {
      return (await eventsOf(env().jsm, env().names.eventsStream)).filter(
        (e: EventEnvelope) => e.correlation.session_id === sessionId,
      );
    },
  };
}

/**
 * Runs `fn` against a gateway on a namespace where no hook-dispatcher or verifier runs (so the
 * plane cannot decide), with one agent; `send` POSTs a body to `path` (and `query`) with its token.
 */
export async function withUndecidedPlane(
  env: TestEnv,
  path: string,
  fn: (send: (body: unknown, query?: string) => Promise<{ status: number; body: unknown }>) => Promise<void>,
): Promise<void> {
  const names = buildNames(`${env.ns}_x`);
  const token = await addAgent({ ...env, names }, "lonely");
  const gateway = await startAgentGateway({
    nc: env.nc,
    names,
    config: { host: "127.0.0.1", port: 0, hookTimeoutMs: 300, verifyTimeoutMs: 300 },
  });
  try {
    await waitFor(() => gateway.agents() === 1);
    await fn(async (body, query = "") => {
      const res = await fetch(`${gateway.url}${path}${query}`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}` },
        body: JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json()) as unknown };
    });
  } finally {
    await gateway.stop();
  }
}
