/**
 * Shared pieces of the LLM gateway tests: a gateway in-process on a free port with one agent and a
 * provider key in its environment, provider and price records written as `geode llm` writes them,
 * and the model-call events read back from the events stream.
 */

import { writeFileSync } from "node:fs";
import path from "node:path";
import { type AgentGateway, startAgentGateway } from "@geode/agent-gateway";
import type { BudgetRecord, EventEnvelope, LlmPriceRecord, LlmProviderRecord } from "@geode/contracts";
import { BudgetStore, LlmPriceStore, LlmProviderStore } from "@geode/state";
import { type TestEnv, useTestEnv, waitFor } from "@geode/testing";
import { afterAll, beforeAll, expect } from "vitest";
import { type GeodeRun, geodeProcess, scratchFolders } from "./agent-process-support.js";
import { addAgent } from "./gateway-support.js";
import { keptLogger } from "./policy-support.js";
import type { StandInGate, StandInRequest } from "./stand-in-server.js";
import { eventsOf } from "./verify-support.js";

/** The provider key the gateway holds: it must reach the provider and nothing else. */
export const PROVIDER_KEY = "sk-geode-test-PROVIDER-KEY-0f3a9c";
export const KEY_ENV = "STANDIN_PROVIDER_KEY";

export interface LlmFixture {
  env: () => TestEnv;
  gateway: () => AgentGateway;
  token: () => string;
  logLines: Array<{ msg: string; fields: unknown }>;
  /** Writes a provider record and waits until the gateway serves it. */
  provider(record: Omit<LlmProviderRecord, "key_env"> & { key_env?: string }): Promise<void>;
  price(record: LlmPriceRecord): Promise<void>;
  budget(key: string, record: Omit<BudgetRecord, "soft_percent"> & { soft_percent?: number }): Promise<void>;
  /** Model-call events (`llm_*`, `cost_*`) so far, oldest first. */
  llmEvents(): Promise<EventEnvelope[]>;
  /** The compiled `geode <args>` on the fixture's namespace, with `extra` in its environment. */
  geode(args: string[], extra?: Record<string, string>): Promise<GeodeRun>;
  /** Run after the file's tests (before the gateway stops), last added first. */
  cleanups: Array<() => unknown>;
}

export function useLlmFixture(config: { timeoutMs?: number; maxBodyBytes?: number } = {}): LlmFixture {
  const env = useTestEnv();
  let gateway: AgentGateway | undefined;
  let token = "";
  const logLines: Array<{ msg: string; fields: unknown }> = [];
  const cleanups: Array<() => unknown> = [];
  beforeAll(async () => {
    const { nc, names } = env();
    token = await addAgent(env(), "laptop");
    gateway = await startAgentGateway({
      nc,
      names,
      log: keptLogger(logLines),
      providerKeys: { [KEY_ENV]: PROVIDER_KEY },
      config: {
        host: "127.0.0.1",
        port: 0,
        ...(config.timeoutMs ? { llmTimeoutMs: config.timeoutMs } : {}),
        ...(config.maxBodyBytes ? { llmMaxBodyBytes: config.maxBodyBytes } : {}),
      },
    });
    await waitFor(() => gateway?.agents() === 1);
  });
  afterAll(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
    await gateway?.stop();
  });
  const ready = () => {
    if (!gateway) throw new Error("the LLM fixture is not ready");
    return gateway;
  };
  const conn = () => ({ nc: env().nc, names: env().names });
  return {
    env,
    gateway: ready,
    token: () => token,
    logLines,
    cleanups,
    geode: (args, extra = {}) => geodeProcess(args, { env: { ...process.env, ...env().env, ...extra } }),
    async provider(record) {
      await (await LlmProviderStore.open(conn())).put({ key_env: KEY_ENV, ...record });
      // Served once a request to it is no longer the gateway's unknown_provider.
      await waitFor(async () => {
        const res = await fetch(`${ready().url}/v1/llm/${record.name}/ready-probe`, {
          headers: { authorization: `Bearer ${token}` },
        });
        const text = await res.text();
        return !text.includes("unknown_provider");
      });
    },
    async price(record) {
      await (await LlmPriceStore.open(conn())).put(record);
      await new Promise((r) => setTimeout(r, 300));
    },
    async budget(key, record) {
      await (await BudgetStore.open(conn())).put(key, { soft_percent: 80, ...record });
      await new Promise((r) => setTimeout(r, 300));
    },
    async llmEvents() {
      return (await eventsOf(env().jsm, env().names.eventsStream)).filter(
        (e) => e.event.startsWith("llm_") || e.event.startsWith("cost_"),
      );
    },
  };
}

/**
 * One real agent CLI whose model calls a test points at the LLM gateway (a row of
 * `connectThroughLlmGateway`): how its stand-in provider starts, and where `geode connect <agent>
 * --llm` writes its config.
 */
export interface LlmAgentRow {
  /** The agent as `geode connect` names it (`codex`, `claude-code`, `gemini-cli`, …). */
  agent: string;
  /** The provider the gateway fronts: its name and kind (`geode llm add <name> --kind <kind>`). */
  provider: { name: string; kind: LlmProviderRecord["kind"] };
  /** Starts the scripted stand-in that plays the provider; `gate` sees each request first. */
  startStandIn(gate: StandInGate): Promise<{ url: string; close(): Promise<void> }>;
  /** The provider's base URL at the stand-in (default its URL as it is). */
  baseUrl?(standInUrl: string): string;
  /** Which stand-in requests are the agent's model calls (the fixture's readiness probe is not). */
  isModelCall(request: StandInRequest): boolean;
  /** The config file in the scratch HOME that connect writes (`--write`), and what it holds before. */
  config: { file: string; before?: string };
}

/**
 * Sets a real agent's model calls on the LLM gateway as a user does: starts the row's stand-in
 * provider, adds it with `geode llm add` (the key by its variable's name), and writes the agent's
 * config with `geode connect <agent> --llm <provider> --write` in a scratch HOME; `seen` collects
 * the model calls that reached the provider. Everything is removed after the file.
 */
export async function connectThroughLlmGateway(
  fx: LlmFixture,
  row: LlmAgentRow,
): Promise<{ seen: StandInRequest[]; home: string; work: string; config: string }> {
  const seen: StandInRequest[] = [];
  const api = await row.startStandIn((r) => {
    if (row.isModelCall(r)) seen.push(r);
  });
  fx.cleanups.push(() => api.close());
  const dirs = scratchFolders(`${row.agent}-llm`);
  fx.cleanups.push(dirs.cleanup);
  const config = path.join(dirs.home, row.config.file);
  if (row.config.before !== undefined) writeFileSync(config, row.config.before);
  const { name, kind } = row.provider;
  const baseUrl = row.baseUrl?.(api.url) ?? api.url;
  const add = await fx.geode(["llm", "add", name, "--kind", kind, "--url", baseUrl, "--key-env", KEY_ENV]);
  expect(add.code, add.err).toBe(0);
  await fx.provider({ name, kind, base_url: baseUrl });
  const connect = await fx.geode([
    "connect",
    row.agent,
    "--llm",
    name,
    "--url",
    fx.gateway().url,
    "--write",
    config,
  ]);
  expect(connect.code, connect.err).toBe(0);
  return { seen, home: dirs.home, work: dirs.work, config };
}

/**
 * Checks what a run through the LLM gateway left: each model call reached the provider with the
 * provider key in `keyHeader` (never the agent's token), `calls` calls were recorded as
 * `llm_call_ended` with `payload`'s fields, and nothing the agent `said` holds the key. Returns the
 * recorded calls.
 */
export async function expectLlmCallsRecorded(
  fx: LlmFixture,
  expected: {
    seen: StandInRequest[];
    keyHeader: { name: string; value: string };
    calls: number;
    payload: Record<string, unknown>;
    said: string;
  },
): Promise<EventEnvelope[]> {
  for (const r of expected.seen) {
    expect(r.headers?.[expected.keyHeader.name]).toBe(expected.keyHeader.value);
    expect(JSON.stringify(r.headers)).not.toContain(fx.token());
  }
  const ended = (await fx.llmEvents()).filter((e) => e.event === "llm_call_ended");
  expect(ended).toHaveLength(expected.calls);
  for (const e of ended) expect(e.payload).toMatchObject(expected.payload);
  expect(expected.said).not.toContain(PROVIDER_KEY);
  return ended;
}

/**
 * The provider key is in none of the namespace's streams (events, audit, KV buckets, …) nor the
 * gateway's log lines.
 */
export async function expectProviderKeyNowhere(fx: LlmFixture): Promise<void> {
  const { jsm, names } = fx.env();
  const streams = await jsm.streams.list().next();
  const ours = streams.filter((s) => s.config.name.includes(names.ns) || s.config.name.includes(names.NS));
  expect(ours.length).toBeGreaterThan(3);
  for (const s of ours) {
    const raw = await eventsOf(jsm, s.config.name).catch(() => []);
    expect(JSON.stringify(raw)).not.toContain(PROVIDER_KEY);
  }
  expect(JSON.stringify(fx.logLines)).not.toContain(PROVIDER_KEY);
}

/** Reads an SSE or JSON answer to its end, noting when each chunk came. */
export async function readChunks(
  res: Response,
): Promise<{ text: string; chunks: Array<{ at: number; text: string }> }> {
  const chunks: Array<{ at: number; text: string }> = [];
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push({ at: Date.now(), text: decoder.decode(value, { stream: true }) });
  }
  return { text: chunks.map((c) => c.text).join(""), chunks };
}
