/**
 * What agents can send the gateway that it must not take as it is: bodies nested deep enough to
 * break recursive code, and correlation ids that carry secrets or are not safe as keys and paths.
 */
import { randomUUID } from "node:crypto";
import type { EventEnvelope, TimelineRecord } from "@geode/contracts";
import { HookName } from "@geode/contracts";
import type { HookEnvelope } from "@geode/sdk";
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
    expect(res.body).toMatchObject({ error: { code: "invalid_request", message: expect.stringMatching(/deeper/) } });
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

    const events = (await allEvents()).filter((e: EventEnvelope) => e.correlation.session_id === corr?.session_id);
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
    for (const c of cases) expect((await fx.post(ccInput("UserPromptSubmit", { prompt: "hi" }, c))).status).toBe(200);
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
