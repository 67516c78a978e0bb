/**
 * Shared pieces of the LLM gateway tests: a gateway in-process on a free port with one agent and a
 * provider key in its environment, provider and price records written as `geode llm` writes them,
 * and the model-call events read back from the events stream.
 */
import { execFile } from "node:child_process";
import { type AgentGateway, startAgentGateway } from "@geode/agent-gateway";
import type { BudgetRecord, EventEnvelope, LlmPriceRecord, LlmProviderRecord } from "@geode/contracts";
import { BudgetStore, LlmPriceStore, LlmProviderStore } from "@geode/state";
import { GEODE_BIN, type TestEnv, useTestEnv, waitFor } from "@geode/testing";
import { afterAll, beforeAll } from "vitest";
import { addAgent } from "./gateway-support.js";
import { keptLogger } from "./policy-support.js";
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
}

export function useLlmFixture(config: { timeoutMs?: number; maxBodyBytes?: number } = {}): LlmFixture {
  const env = useTestEnv();
  let gateway: AgentGateway | undefined;
  let token = "";
  const logLines: Array<{ msg: string; fields: unknown }> = [];
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

/** Runs the `geode` CLI against the fixture's bus, as an operator does. */
export function geodeFor(
  fx: LlmFixture,
  args: string[],
  extra: Record<string, string> = {},
): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [GEODE_BIN, ...args],
      { env: { ...process.env, ...fx.env().env, ...extra } },
      (error, stdout, stderr) =>
        resolve({
          code: error ? (typeof error.code === "number" ? error.code : 1) : 0,
          out: stdout,
          err: stderr,
        }),
    );
  });
}
