/**
 * `GET /api/llm` and model calls in the session story, against real NATS and Postgres: calls
 * made through the real agent-gateway to a Chat Completions stand-in playing OpenAI, the events
 * projected by the real activity-recorder, budgets and their use from KV `{ns}_budgets` and
 * `{ns}_llm_spend`, a call the budget refuses. Never a prompt's text in any reply.
 */

import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { type ActivityRecorder, startActivityRecorder } from "@geode/activity-recorder";
import { ensureBucket, RuntimeEventBus } from "@geode/bus";
import { type RunningConsole, startConsole } from "@geode/console";
import {
  type AgentRecord,
  CLAUDE_CODE_HOOK_PATH,
  ConsoleLlmSchema,
  ConsoleSessionStorySchema,
} from "@geode/contracts";
import { openProjectionDb, type ProjectionDb } from "@geode/projection";
import { BudgetStore } from "@geode/state";
import { waitFor } from "@geode/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startChatCompletionsStandIn } from "./chat-completions-stand-in.js";
import { CONSOLE_TOKEN } from "./console-support.js";
import { ccInput } from "./gateway-support.js";
import { PROVIDER_KEY, useLlmFixture } from "./llm-support.js";

const fx = useLlmFixture();
const PROMPT = "the secret prompt text of the llm console test";

let chat: Awaited<ReturnType<typeof startChatCompletionsStandIn>>;
let recorder: ActivityRecorder;
let projection: ProjectionDb;
let running: RunningConsole;
let runsDir = "";

beforeAll(async () => {
  const { nc, names, databaseUrl } = fx.env();
  // The agent joins the group `devs`: its calls count toward the group too.
  const agents = await ensureBucket(nc, names, "agents");
  const laptop = JSON.parse(new TextDecoder().decode((await agents.get("laptop"))!.value)) as AgentRecord;
  await agents.put("laptop", JSON.stringify({ ...laptop, groups: ["devs"] }));
  chat = await startChatCompletionsStandIn([]);
  runsDir = mkdtempSync(path.join(os.tmpdir(), "geode-console-llm-"));
  recorder = await startActivityRecorder({ nc, names, databaseUrl, runsDir });
  projection = await openProjectionDb({ ns: fx.env().ns, databaseUrl });
  running = await startConsole({
    conn: { nc, names },
    token: CONSOLE_TOKEN,
    port: 0,
    projection: { db: projection.db, ns: projection.ns },
  });
  await fx.provider({ name: "chat", kind: "openai", base_url: `${chat.url}/v1` });
  await fx.price({ model: "gpt-5*", input: 2, output: 10 });
}, 60_000);

afterAll(async () => {
  await running?.close();
  await recorder?.stop();
  await projection?.close();
  await chat?.close();
  if (runsDir) rmSync(runsDir, { recursive: true, force: true });
});

const api = async (route: string, token: string | null = CONSOLE_TOKEN) => {
  const res = await fetch(`${running.url}${route}`, {
    headers: token === null ? {} : { authorization: `Bearer ${token}` },
  });
  const text = await res.text();
  return { status: res.status, text, body: JSON.parse(text) as unknown };
};
const llm = async () => {
  const r = await api("/api/llm");
  expect(r.status).toBe(200);
  expect(r.text).not.toContain(PROMPT);
  expect(r.text).not.toContain(PROVIDER_KEY);
  return ConsoleLlmSchema.parse(r.body);
};

/** One Chat Completions call through the gateway (12 input and 8 output tokens from the stand-in). */
const call = (session?: string) =>
  fetch(`${fx.gateway().url}/v1/llm/chat/chat/completions`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      authorization: `Bearer ${fx.token()}`,
      ...(session ? { "x-geode-session": session } : {}),
    },
    body: JSON.stringify({ model: "gpt-5-mini", messages: [{ role: "user", content: PROMPT }] }),
  });

const COST = (12 * 2 + 8 * 10) / 1e6;

describe("GET /api/llm", () => {
  it("answers empty before any call, with 24 hourly buckets ending now", async () => {
    const body = await llm();
    expect(body.window_ms).toBe(24 * 3_600_000);
    expect(body.bucket_ms).toBe(3_600_000);
    expect(body.buckets).toHaveLength(24);
    const last = body.buckets.at(-1)!;
    expect(Date.now() - last).toBeGreaterThanOrEqual(0);
    expect(Date.now() - last).toBeLessThan(3_600_000 + 5_000);
    expect(body.totals).toEqual({ usd: 0, tokens: 0, calls: 0, failed: 0, refused: 0 });
    expect(body.agents).toEqual([]);
  });

  it("shows spend per agent, group and session, the budget's use, and the call it refused", async () => {
    // A hook session of the agent names itself to the gateway; the console learns its agent from it.
    const bus = await RuntimeEventBus.create({ nc: fx.env().nc, names: fx.env().names, source: "test" });
    await bus.emit(
      "session_started",
      { agent: "laptop", agent_kind: "claude-code" },
      { session_id: "s-named" },
    );
    await fx.budget("agent.laptop", { limit_tokens: 30, window: "1h" });
    expect((await call()).status).toBe(200);
    expect((await call("s-named")).status).toBe(200);
    // 40 tokens used of 30: the next call is refused with the provider's 429.
    await waitFor(async () => (await llm()).budgets[0]?.used_tokens === 40, 20_000);
    const refused = await call();
    expect(refused.status).toBe(429);
    await waitFor(async () => {
      const b = await llm();
      return b.totals.calls === 2 && b.totals.refused === 1;
    }, 30_000);
    const body = await llm();
    expect(body.totals).toEqual({ usd: 2 * COST, tokens: 40, calls: 2, failed: 0, refused: 1 });
    expect(body.agents.map((a) => [a.name, a.total_tokens, a.total_calls])).toEqual([["laptop", 40, 2]]);
    expect(body.agents[0]?.total_usd).toBeCloseTo(2 * COST, 12);
    // The calls of this hour land in the last bucket.
    expect(body.agents[0]?.tokens.at(-1)).toBe(40);
    expect(body.agents[0]?.tokens.slice(0, -1).every((t) => t === 0)).toBe(true);
    expect(body.groups.map((g) => [g.name, g.total_tokens])).toEqual([["devs", 40]]);
    const sessions = body.sessions.map((s) => s.name).sort();
    expect(sessions).toHaveLength(2);
    expect(sessions[0]).toMatch(/^llm-laptop-/);
    expect(sessions[1]).toBe("s-named");
    expect(body.budgets).toEqual([
      expect.objectContaining({
        key: "agent.laptop",
        scope: "agent",
        name: "laptop",
        window: "1h",
        limit_tokens: 30,
        limit_usd: null,
        used_tokens: 40,
        used_calls: 2,
        percent: 133.33,
        state: "spent",
      }),
    ]);
    expect(body.budgets[0]?.window_end).toBe(body.budgets[0]!.window_start + 3_600_000);
    expect(body.refused).toEqual([
      expect.objectContaining({
        agent: "laptop",
        provider: "chat",
        model: "gpt-5-mini",
        budget: "agent.laptop",
        window: "1h",
        reason: "limit_tokens",
        used_tokens: 40,
        limit_tokens: 30,
      }),
    ]);
    expect(body.refused[0]?.session_id).toMatch(/^llm-laptop-/);
  });

  it("puts each model call in its session's story with model, tokens and cost, and the refused call", async () => {
    const story = async (id: string) => {
      const r = await api(`/api/sessions/${encodeURIComponent(id)}/story`);
      expect(r.text).not.toContain(PROMPT);
      return r.status === 200 ? ConsoleSessionStorySchema.parse(r.body) : null;
    };
    const named = (await story("s-named"))!;
    expect(named.session.agent).toBe("laptop");
    const steps = named.steps.filter((s) => s.kind === "llm_call");
    expect(steps).toHaveLength(1);
    expect(steps[0]).toMatchObject({
      verdict: "allowed",
      outcome: "ended",
      llm: {
        provider: "chat",
        model: "gpt-5-mini",
        input_tokens: 12,
        cached_input_tokens: 0,
        output_tokens: 8,
        status: 200,
        stream: false,
        budget: null,
      },
    });
    expect(steps[0]?.llm?.cost_usd).toBeCloseTo(COST, 12);
    const auto = (await llm()).refused[0]!.session_id;
    const mine = (await story(auto))!.steps;
    expect(mine.map((s) => [s.kind, s.verdict, s.outcome, s.llm?.status, s.decided_by])).toEqual([
      ["llm_call", "allowed", "ended", 200, null],
      ["llm_call", "refused", "not run", 429, "agent.laptop"],
    ]);
    expect(mine[1]?.reason).toBe("limit_tokens, window 1h");
  });

  it("ties a call that names no session to the agent's one open hook session, and shows its agent", async () => {
    await (await BudgetStore.open({ nc: fx.env().nc, names: fx.env().names })).remove("agent.laptop");
    await new Promise((r) => setTimeout(r, 300));
    const session = { session_id: randomUUID() };
    const hook = (event: string, fields: Record<string, unknown> = {}) =>
      fetch(`${fx.gateway().url}${CLAUDE_CODE_HOOK_PATH}`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${fx.token()}` },
        body: JSON.stringify(ccInput(event, fields, session)),
      });
    expect((await hook("SessionStart", { source: "startup", model: "claude-x" })).status).toBe(200);
    const before = (await fx.llmEvents()).length;
    // Only the agent token: the call is the open session's.
    expect((await call()).status).toBe(200);
    // A session the agent names that no hook started: its agent still comes from the call.
    expect((await call("s-orphan")).status).toBe(200);
    expect((await hook("SessionEnd", { reason: "exit" })).status).toBe(200);
    // Once it ended the agent has no open session: the call goes to its model-call session.
    await new Promise((r) => setTimeout(r, 300));
    expect((await call()).status).toBe(200);
    const events = (await waitFor(async () => {
      const e = (await fx.llmEvents()).slice(before);
      return e.filter((x) => x.event === "llm_call_ended").length === 3 ? e : null;
    }, 20_000))!;
    expect(events.filter((e) => e.event === "llm_call_ended").map((e) => e.correlation.session_id)).toEqual([
      session.session_id,
      "s-orphan",
      expect.stringMatching(/^llm-laptop-/),
    ]);
    const first = events.filter((e) => e.event === "llm_call_ended")[0]!;
    expect(first.correlation.session_id).toBe(session.session_id);
    expect(first.payload["agent"]).toBe("laptop");
    for (const e of events) expect(e.payload["agent"]).toBe("laptop");
    const story = (await waitFor(async () => {
      const r = await api(`/api/sessions/${encodeURIComponent(session.session_id)}/story`);
      if (r.status !== 200) return null;
      const s = ConsoleSessionStorySchema.parse(r.body);
      return s.steps.some((x) => x.kind === "llm_call" && x.outcome === "ended") ? s : null;
    }, 30_000))!;
    expect(story.session.agent).toBe("laptop");
    const steps = story.steps.filter((x) => x.kind === "llm_call");
    expect(steps).toHaveLength(1);
    expect(steps[0]).toMatchObject({ outcome: "ended", llm: { model: "gpt-5-mini", input_tokens: 12 } });
    const body = (await waitFor(async () => {
      const b = await llm();
      return b.sessions.some((x) => x.name === "s-orphan") ? b : null;
    }, 30_000))!;
    expect(body.agents.map((a) => a.name)).toEqual(["laptop"]);
    expect(body.sessions.find((x) => x.name === session.session_id)?.total_calls).toBe(1);
  }, 90_000);

  it("refuses query parameters with a code and answers 401 without the token", async () => {
    const bad = await api("/api/llm?window=7d");
    expect(bad.status).toBe(400);
    expect(bad.text).toContain("invalid_request");
    expect((await api("/api/llm", null)).status).toBe(401);
    expect((await api("/api/llm")).status).toBe(200);
  });
});
