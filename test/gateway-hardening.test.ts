/**
 * What agents can send the gateway that it must not take as it is: bodies nested deep enough to
 * break recursive code, and correlation ids that carry secrets or are not safe as keys and paths.
 */
import { randomUUID } from "node:crypto";
import { ensureBucket } from "@geode/bus";
import type { EventEnvelope, TimelineRecord } from "@geode/contracts";
import { HookName, sha256 } from "@geode/contracts";
import { type HookEnvelope, serveApprovals } from "@geode/sdk";
import { waitFor } from "@geode/testing";
import { describe, expect, it } from "vitest";
import { ccInput, useGatewayFixture } from "./gateway-support.js";
import { eventsOf, timelineOf } from "./verify-support.js";

const fx = useGatewayFixture();

/** `{"a": {"a": … {"a": 1}}}`, `depth` objects deep, as raw JSON text. */
const nested = (depth: number) => `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`;

/** A Claude Code body whose `field` holds `inner` (raw JSON text). */
function rawInput(event: string, field: string, inner: string, fields: Record<string, unknown> = {}): string {
  const base = JSON.stringify(ccInput(event, fields));
  return `${base.slice(0, -1)},${JSON.stringify(field)}:${inner}}`;
}

const allEvents = () => eventsOf(fx.env().jsm, fx.env().names.eventsStream);
const allTimeline = () => timelineOf(fx.env().jsm, fx.env().names.timelineStream);

describe("deep JSON", () => {
  it("a PostToolUse body nested 5,000 deep is a 400 and nothing is invoked", async () => {
    const seen: HookEnvelope[] = [];
    await fx.scope().serve(HookName.PostToolUse, { name: "post-watch" }, (e) => {
      seen.push(e);
      return null;
    });
    const before = (await allEvents()).length;
    const raw = rawInput("PostToolUse", "tool_response", nested(5_000), {
      tool_name: "Bash",
      tool_input: { command: "ls" },
      tool_use_id: "toolu_deep_1",
    });
    const res = await fx.post(null, { raw });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({
      error: { code: "invalid_request", message: expect.stringMatching(/deeper/) },
    });
    expect(seen).toHaveLength(0);
    expect((await allEvents()).length).toBe(before);
  });

  it("a PreToolUse body nested 5,000 deep is a 400, not a deny quoting a stack overflow", async () => {
    const seen: HookEnvelope[] = [];
    await fx.scope().serve(HookName.PreToolUse, { name: "pre-watch" }, (e) => {
      seen.push(e);
      return null;
    });
    const raw = rawInput("PreToolUse", "tool_input", nested(5_000), { tool_name: "Bash" });
    const res = await fx.post(null, { raw });
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body)).not.toMatch(/call stack/i);
    expect(seen).toHaveLength(0);
  });

  it("a body nested within the bound is still served", async () => {
    const seen: HookEnvelope[] = [];
    await fx.scope().serve(HookName.PreToolUse, { name: "pre-ok" }, (e) => {
      seen.push(e);
      return null;
    });
    const raw = rawInput("PreToolUse", "tool_input", nested(40), { tool_name: "Bash" });
    const res = await fx.post(null, { raw });
    expect(res.status).toBe(200);
    expect(seen).toHaveLength(1);
  });
});

describe("correlation ids from the agent", () => {
  const SECRET = "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789";

  it("a secret in tool_use_id or session_id reaches no handler, event or timeline record", async () => {
    const seen: HookEnvelope[] = [];
    await fx.scope().serve(HookName.PreToolUse, { name: "id-watch" }, (e) => {
      seen.push(e);
      return null;
    });
    const session = { session_id: `sess-${SECRET}`, prompt_id: randomUUID() };
    const pre = ccInput(
      "PreToolUse",
      { tool_name: "Bash", tool_input: { command: "ls" }, tool_use_id: SECRET },
      session,
    );
    expect((await fx.post(pre)).status).toBe(200);
    expect(seen).toHaveLength(1);
    const corr = seen[0]?.correlation;
    expect(JSON.stringify(corr)).not.toContain("AbCdEfGhIjKl");
    expect(corr?.session_id).toMatch(/^redacted-[0-9a-f]{24}$/);
    expect(corr?.tool_call_id).toMatch(/^redacted-[0-9a-f]{24}$/);
    // The same id always maps to the same stand-in: the session stays one session.
    expect(corr?.run_id).toBe(corr?.session_id);
    const again = ccInput(
      "PreToolUse",
      { tool_name: "Bash", tool_input: { command: "pwd" }, tool_use_id: "toolu_plain_2" },
      session,
    );
    expect((await fx.post(again)).status).toBe(200);
    expect(seen[1]?.correlation.session_id).toBe(corr?.session_id);
    expect(seen[1]?.correlation.tool_call_id).toBe("toolu_plain_2");

    const events = (await allEvents()).filter(
      (e: EventEnvelope) => e.correlation.session_id === corr?.session_id,
    );
    const records = (await allTimeline()).filter(
      (r: TimelineRecord) => r.correlation.session_id === corr?.session_id,
    );
    expect(events.length).toBeGreaterThan(0);
    expect(records.length).toBeGreaterThan(0);
    expect(JSON.stringify([events, records])).not.toContain("AbCdEfGhIjKl");
    expect(JSON.stringify(await allEvents())).not.toContain("AbCdEfGhIjKl");
  });

  it("ids too long or outside the safe characters are replaced, plain ids kept", async () => {
    const seen: HookEnvelope[] = [];
    await fx.scope().serve(HookName.UserPromptSubmit, { name: "prompt-ids" }, (e) => {
      seen.push(e);
      return null;
    });
    const cases = [
      { session_id: "a".repeat(300), prompt_id: "../../etc/passwd" },
      { session_id: "with space/and/slashes", prompt_id: "p\u0000nul" },
      { session_id: "6f1c2d9e-0d7a-4b8e-9c1a-2f3e4d5c6b7a", prompt_id: "prompt_01.ok:1" },
    ];
    for (const c of cases)
      expect((await fx.post(ccInput("UserPromptSubmit", { prompt: "hi" }, c))).status).toBe(200);
    const [long, slashes, plain] = seen.map((e) => e.correlation);
    expect(long?.session_id).toMatch(/^redacted-[0-9a-f]{24}$/);
    expect(long?.turn_id).toMatch(/^redacted-[0-9a-f]{24}$/);
    expect(slashes?.session_id).toMatch(/^redacted-[0-9a-f]{24}$/);
    expect(slashes?.turn_id).toMatch(/^redacted-[0-9a-f]{24}$/);
    expect(plain?.session_id).toBe(cases[2]?.session_id);
    expect(plain?.run_id).toBe(cases[2]?.session_id);
    expect(plain?.turn_id).toBe("prompt_01.ok:1");
  });
});

describe("the timeline of an agent's tool call", () => {
  const eventsOfSession = async (sessionId: string) =>
    (await allEvents()).filter((e: EventEnvelope) => e.correlation.session_id === sessionId);

  it("a permission prompt answered on the plane: its approval names the call, the start follows it", async () => {
    const approver = serveApprovals({ nc: fx.env().nc, names: fx.env().names }, (r) =>
      r.detail.includes("ok.txt") ? { decision: "allow", reason: "fine" } : "deny",
    );
    await fx.env().nc.flush();
    try {
      const session = { session_id: randomUUID(), prompt_id: randomUUID() };
      const call = (file: string, id: string) => ({
        tool_name: "Write",
        tool_input: { file_path: file, content: "x" },
        tool_use_id: id,
      });
      for (const [file, id] of [
        ["/w/ok.txt", "toolu_ok"],
        ["/w/no.txt", "toolu_no"],
      ] as const) {
        expect((await fx.post(ccInput("PreToolUse", call(file, id), session))).body).toEqual({});
        const { tool_use_id: _id, ...prompt } = call(file, id);
        const res = await fx.post(ccInput("PermissionRequest", prompt, session));
        expect(res.status).toBe(200);
      }
      await waitFor(
        async () =>
          (await eventsOfSession(session.session_id)).filter((e) => e.event === "approval_transition")
            .length === 2,
      );
      const events = await eventsOfSession(session.session_id);
      const approvals = events.filter((e) => e.event === "tool_approval_requested");
      expect(approvals.map((e) => e.correlation.tool_call_id).sort()).toEqual(["toolu_no", "toolu_ok"]);
      const started = events.filter((e) => e.event === "tool_exec_started");
      expect(started.map((e) => e.correlation.tool_call_id)).toEqual(["toolu_ok"]);
      const order = events.map((e) => `${e.event}:${e.correlation.tool_call_id}`);
      expect(order.indexOf("approval_transition:toolu_ok")).toBeLessThan(
        order.indexOf("tool_exec_started:toolu_ok"),
      );

      // The call ran and reports its result: its start is not recorded twice.
      const done = ccInput(
        "PostToolUse",
        { ...call("/w/ok.txt", "toolu_ok"), tool_response: { ok: true } },
        session,
      );
      expect((await fx.post(done)).status).toBe(200);
      await waitFor(async () =>
        (await eventsOfSession(session.session_id)).some((e) => e.event === "tool_exec_ended"),
      );
      const after = await eventsOfSession(session.session_id);
      expect(after.filter((e) => e.event === "tool_exec_started")).toHaveLength(1);
      const called = (await allTimeline()).filter(
        (r: TimelineRecord) => r.correlation.session_id === session.session_id && r.kind === "tool.called",
      );
      expect(called).toHaveLength(1);
    } finally {
      await approver.close();
    }
  });

  it("the model the agent names is the session's: at its start, or later as model_switched", async () => {
    const named = { session_id: randomUUID(), prompt_id: randomUUID() };
    expect(
      (await fx.post(ccInput("SessionStart", { source: "startup", model: "claude-sonnet-4-5" }, named)))
        .status,
    ).toBe(200);
    const late = { session_id: randomUUID(), prompt_id: randomUUID() };
    expect((await fx.post(ccInput("UserPromptSubmit", { prompt: "hi" }, late))).status).toBe(200);
    expect(
      (await fx.post(ccInput("SessionStart", { source: "startup", model: "claude-opus-4-1" }, late))).status,
    ).toBe(200);
    await waitFor(async () =>
      (await eventsOfSession(late.session_id)).some((e) => e.event === "model_switched"),
    );
    const startedNamed = (await eventsOfSession(named.session_id)).find((e) => e.event === "session_started");
    expect(startedNamed?.payload["model"]).toBe("claude-sonnet-4-5");
    const lateEvents = await eventsOfSession(late.session_id);
    expect(lateEvents.find((e) => e.event === "session_started")?.payload["model"]).toBe("");
    expect(lateEvents.find((e) => e.event === "model_switched")?.payload).toMatchObject({
      from: "",
      to: "claude-opus-4-1",
    });
    const kv = await ensureBucket(fx.env().nc, fx.env().names, "sessions");
    const rec = await kv.get(fx.env().names.sessionKey(late.session_id));
    expect(rec?.json()).toMatchObject({ model: "claude-opus-4-1", generation: 0 });
  });
});

describe("refused tokens", () => {
  it("are logged once per address per minute, with a digest prefix and never the token", async () => {
    const wrong = `geode_agent_${randomUUID()}`;
    const refusedLines = () =>
      fx.logLines().filter((l) => l.msg === "agent-gateway refused an agent token (401)");
    expect(refusedLines()).toHaveLength(0);
    for (let i = 0; i < 5; i++)
      expect((await fx.post(ccInput("UserPromptSubmit", { prompt: "hi" }), { token: wrong })).status).toBe(
        401,
      );
    expect((await fx.post(ccInput("UserPromptSubmit", { prompt: "hi" }), { token: null })).status).toBe(401);
    // Six refusals from one address within the minute: one line.
    const lines = refusedLines();
    expect(lines).toHaveLength(1);
    expect(lines[0]?.fields).toMatchObject({
      remote_addr: expect.stringMatching(/127\.0\.0\.1/),
      path: "/v1/claude-code/hook",
      token_sha256_prefix: sha256(wrong).slice(0, 12),
      why: "unknown",
    });
    expect(JSON.stringify(fx.logLines())).not.toContain(wrong);
    expect(JSON.stringify(fx.logLines())).not.toContain(wrong.slice(12));
  });
});
