import { request } from "node:http";
import { createHookClient, RuntimeEventBus } from "@geode/bus";
import {
  ConsoleApprovalAnsweredSchema,
  ConsoleApprovalsPageSchema,
  ConsoleHandlersPageSchema,
  ConsoleLoginReplySchema,
  ConsoleLogoutReplySchema,
  ConsoleMeSchema,
  ConsoleParkedTurnsPageSchema,
  ConsoleReceiptResolvedSchema,
  ConsoleReceiptsPageSchema,
  ConsoleRecorderSchema,
  ConsoleRunsPageSchema,
  ConsoleSessionResolvedSchema,
  ConsoleTimelinePageSchema,
  type EventEnvelope,
  EventEnvelopeSchema,
} from "@geode/contracts";
import { serveHook } from "@geode/sdk";
import { ReceiptStore, RunStore } from "@geode/state";
import { useFixture, waitFor } from "@geode/testing";
import { afterAll, describe, expect, it } from "vitest";
import { type ApiBody, CONSOLE_TOKEN, startConsolePlane } from "./console-support.js";
import { candidate, rootTurn } from "./verify-support.js";

const { fixture: plane } = useFixture(startConsolePlane, (p) => p.stop());

/** Collects the runtime events of `event` published from now on. */
function watchEvents(event: string): EventEnvelope[] {
  const { nc, names } = plane().env;
  const seen: EventEnvelope[] = [];
  const sub = nc.subscribe(names.event(event as never), {
    callback: (_err: unknown, m: { json(): unknown }) => {
      const r = EventEnvelopeSchema.safeParse(m.json());
      if (r.success) seen.push(r.data);
    },
  });
  afterAll(() => sub.unsubscribe());
  return seen;
}

describe("the console API: the token", () => {
  it("answers 401 with a coded error on every API route without the token, or with a wrong one", async () => {
    for (const path of [
      "/api/approvals",
      "/api/runs",
      "/api/runs/r1/timeline",
      "/api/handlers",
      "/api/receipts?state=admitted",
      "/api/sessions?status=paused",
      "/api/sessions",
      "/api/sessions/s1/story",
      "/api/stats",
      "/api/recorder",
    ]) {
      for (const token of [null, "wrong-token"]) {
        const r = await plane().api(path, { token });
        expect(r.status, `${path} ${token}`).toBe(401);
        expect(r.body.error.code).toBe("policy_denied");
      }
    }
    const post = await plane().api("/api/approvals/answer", {
      token: null,
      body: { approval_id: "x", decision: "allow" },
    });
    expect(post.status).toBe(401);
  });

  it("signs a page in with the token once and keeps only an HttpOnly, SameSite=Strict session cookie", async () => {
    const bad = await plane().api("/api/login", { token: null, body: { token: "nope", operator: "ana" } });
    expect(bad.status).toBe(401);
    expect(bad.headers.get("set-cookie")).toBeNull();
    const ok = await plane().api("/api/login", {
      token: null,
      body: { token: CONSOLE_TOKEN, operator: "ana" },
    });
    expect(ok.status).toBe(200);
    const cookie = ok.headers.get("set-cookie")!;
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Strict/);
    expect(cookie).not.toContain(CONSOLE_TOKEN);
    expect(ConsoleLoginReplySchema.parse(ok.body)).toEqual({ operator: "ana" });
    const session = cookie.split(";")[0]!;
    const me = await plane().api("/api/me", { token: null, headers: { cookie: session } });
    expect(me).toMatchObject({ status: 200, body: { operator: "ana", via: "cookie" } });
    ConsoleMeSchema.parse(me.body);
    const out = await plane().api("/api/logout", { token: null, headers: { cookie: session }, body: {} });
    ConsoleLogoutReplySchema.parse(out.body);
    expect((await plane().api("/api/me", { token: null, headers: { cookie: session } })).status).toBe(401);
  });

  it("refuses a host name that is not loopback (a DNS-rebound page cannot reach the API)", async () => {
    // fetch will not send a Host header of its choosing; a plain request does.
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(`${plane().console.url}/api/approvals`, {
        headers: { authorization: `Bearer ${CONSOLE_TOKEN}`, host: "evil.example:4281" },
      });
      req.on("response", (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on("error", reject);
      req.end();
    });
    expect(status).toBe(421);
  });
});

describe("the console API: bad input gets a coded error and changes nothing", () => {
  it.each([
    ["not JSON", "/api/approvals/answer", "{nope", 400, "the body is not valid JSON"],
    [
      "an unknown field",
      "/api/approvals/answer",
      { approval_id: "a", decision: "allow", extra: 1 },
      400,
      "unknown field(s): extra",
    ],
    [
      "a bad decision",
      "/api/approvals/answer",
      { approval_id: "a", decision: "maybe" },
      400,
      "decision must be one of allow, deny",
    ],
    [
      "no approval id",
      "/api/approvals/answer",
      { decision: "allow" },
      400,
      "approval_id must be a non-empty string of at most 128 characters",
    ],
    [
      "a reason that is not text",
      "/api/approvals/answer",
      { approval_id: "a", decision: "deny", reason: 7 },
      400,
      "reason must be a string of at most 1024 characters",
    ],
    [
      "an unknown approval",
      "/api/approvals/answer",
      { approval_id: "a", decision: "allow" },
      404,
      "approval a is not pending (answered or expired)",
    ],
    [
      "a bad operator name",
      "/api/receipts/resolve",
      { key: "k", as: "failed", operator: "<b>" },
      400,
      "operator must match [A-Za-z0-9_.@-]{1,64}",
    ],
    [
      "revise without an instruction",
      "/api/sessions/resolve",
      { session_id: "s", turn_id: "t", action: "revise" },
      400,
      "revise requires an instruction",
    ],
  ])("%s", async (_name, path, body, status, message) => {
    const r = await plane().api(path, { body });
    expect(r.status).toBe(status);
    expect(r.body.error.code).toBe("invalid_request");
    expect(r.body.error.message).toBe(message);
  });

  it("refuses bad paging and bad filters", async () => {
    for (const path of [
      "/api/runs?limit=0",
      "/api/runs?limit=201",
      "/api/approvals?offset=-1",
      "/api/receipts?state=nope",
    ]) {
      const r = await plane().api(path);
      expect(r.status, path).toBe(400);
      expect(r.body.error.code).toBe("invalid_request");
    }
    expect((await plane().api("/api/runs/..%2Fetc/timeline")).status).toBe(400);
    expect((await plane().api("/api/nothing")).status).toBe(404);
    expect((await plane().api("/api/runs", { method: "DELETE" })).status).toBe(405);
  });
});

describe("the console API: approvals", () => {
  it("lists a pending approval with tool, safety level and detail; allowing it lets the tool call run, recorded with the operator", async () => {
    const transitions = watchEvents("approval_transition");
    const call = plane().callTool(
      "deploy",
      { target: "staging" },
      { session_id: "s-appr", tool_call_id: "c1" },
    );
    let pending: ApiBody;
    await waitFor(async () => {
      const r = await plane().api("/api/approvals");
      pending = r.body.items.find((a: ApiBody) => a.tool_name === "deploy");
      return pending !== undefined;
    }, 20_000);
    expect(pending).toMatchObject({ tool_name: "deploy", safety_level: "mutation" });
    ConsoleApprovalsPageSchema.parse((await plane().api("/api/approvals")).body);
    expect(pending.detail).toContain("staging");
    const answer = await plane().api("/api/approvals/answer", {
      body: { approval_id: pending.approval_id, decision: "allow", reason: "looks right", operator: "bo" },
    });
    expect(answer).toMatchObject({ status: 200, body: { decision: "allow", approver: "bo" } });
    ConsoleApprovalAnsweredSchema.parse(answer.body);
    const reply = await call;
    expect(reply.status).toBe("completed");
    expect(plane().deploy.calls).toEqual([{ target: "staging" }]);
    await waitFor(() => transitions.length > 0);
    expect(transitions[0]!.payload).toMatchObject({ decision: "allow", approver: "bo" });
    expect((await plane().api("/api/approvals")).body.items).toEqual([]);
  });

  it("denying one denies the tool call with the operator's reason", async () => {
    const call = plane().callTool("deploy", { target: "prod" }, { session_id: "s-deny", tool_call_id: "c2" });
    let id = "";
    await waitFor(async () => {
      const r = await plane().api("/api/approvals");
      id = r.body.items[0]?.approval_id ?? "";
      return id !== "";
    }, 20_000);
    await plane().api("/api/approvals/answer", {
      body: { approval_id: id, decision: "deny", reason: "not today" },
    });
    const reply = await call;
    expect(reply.status).toBe("denied");
    expect(reply.reason).toContain("not today");
    expect(reply.reason).toContain("by console");
  });
});

describe("the console API: paused sessions, receipts, runs, handlers, recorder", () => {
  it("lists a parked candidate with its pending text and delivers it through verify.resolve", async () => {
    const transitions = watchEvents("approval_transition");
    const corr = rootTurn();
    const parked = await plane().verify.finalize({
      correlation: corr,
      candidate: candidate("half done", { termination_reason: "max_rounds" }),
    });
    expect(parked.policy_action).toBe("escalate");
    const list = await plane().api("/api/sessions?status=paused");
    ConsoleParkedTurnsPageSchema.parse(list.body);
    const row = list.body.items.find((s: ApiBody) => s.session_id === corr.session_id);
    expect(row).toMatchObject({
      turn_id: corr.turn_id,
      pending_text: "half done",
      policy_action: "escalate",
    });
    const r = await plane().api("/api/sessions/resolve", {
      body: { session_id: corr.session_id, turn_id: corr.turn_id, action: "deliver", operator: "cy" },
    });
    expect(r).toMatchObject({
      status: 200,
      body: { policy_action: "accept", deliver: true, operator: "cy" },
    });
    ConsoleSessionResolvedSchema.parse(r.body);
    const again = await plane().api("/api/sessions?status=paused");
    expect(again.body.items.some((s: ApiBody) => s.session_id === corr.session_id)).toBe(false);
    await waitFor(() => transitions.some((t) => t.payload["subject"] === "verification"));
    expect(transitions.find((t) => t.payload["subject"] === "verification")!.payload).toMatchObject({
      action: "deliver",
      operator: "cy",
    });
    const twice = await plane().api("/api/sessions/resolve", {
      body: { session_id: corr.session_id, turn_id: corr.turn_id, action: "deliver" },
    });
    expect(twice.status).toBe(400);
    expect(twice.body.error.code).toBe("invalid_request");
  });

  it("lists admitted receipts and resolves one whose lease lapsed, as an event naming the operator", async () => {
    const recovered = watchEvents("tool_recovery_failed");
    const { nc, names } = plane().env;
    const receipts = await ReceiptStore.open({ nc, names });
    await receipts.admit(
      "op-lapsed",
      { tool_name: "deploy", arguments_sha256: "x", correlation: {} },
      Date.now() - 1,
    );
    await receipts.admit(
      "op-live",
      { tool_name: "deploy", arguments_sha256: "y", correlation: {} },
      Date.now() + 60_000,
    );
    const list = await plane().api("/api/receipts?state=admitted");
    ConsoleReceiptsPageSchema.parse(list.body);
    expect(list.body.items.map((r: ApiBody) => [r.key, r.running])).toEqual([
      ["op-lapsed", false],
      ["op-live", true],
    ]);
    const running = await plane().api("/api/receipts/resolve", { body: { key: "op-live", as: "failed" } });
    expect(running.status).toBe(409);
    const r = await plane().api("/api/receipts/resolve", {
      body: { key: "op-lapsed", as: "failed", reason: "checked: never deployed", operator: "dee" },
    });
    expect(r).toMatchObject({ status: 200, body: { state: "failed", by: "dee" } });
    ConsoleReceiptResolvedSchema.parse(r.body);
    expect((await receipts.get("op-lapsed"))?.receipt.resolution).toMatchObject({ by: "dee" });
    await waitFor(() => recovered.length > 0);
    expect(recovered[0]!.payload).toMatchObject({ receipt_key: "op-lapsed", by: "dee" });
    const missing = await plane().api("/api/receipts/resolve", { body: { key: "nope", as: "failed" } });
    expect(missing.status).toBe(404);
  });

  it("lists runs and pages a run's timeline from the streams", async () => {
    const { nc, names } = plane().env;
    const runs = await RunStore.open({ nc, names });
    await runs.open("run-a");
    await runs.open("run-b");
    const events = await RuntimeEventBus.create({ nc, names, source: "test" });
    for (let i = 0; i < 3; i++)
      await events.emit("turn_completed", { n: i }, { run_id: "run-a", session_id: "s" });
    await events.emit("turn_completed", { n: 99 }, { run_id: "run-b" });
    await events.timeline("session.started", { model: "m" }, { run_id: "run-a", session_id: "s" });
    const list = await plane().api("/api/runs?limit=1");
    expect(list.body).toMatchObject({ total: 2, limit: 1, next_offset: 1 });
    ConsoleRunsPageSchema.parse(list.body);
    const all = await plane().api("/api/runs/run-a/timeline");
    ConsoleTimelinePageSchema.parse(all.body);
    expect(all.body.items.map((i: ApiBody) => i.name)).toEqual([
      "turn_completed",
      "turn_completed",
      "turn_completed",
      "session.started",
    ]);
    const first = await plane().api("/api/runs/run-a/timeline?limit=2");
    expect(first.body.items).toHaveLength(2);
    expect(first.body.more).toBe(true);
    const rest = await plane().api(`/api/runs/run-a/timeline?after=${first.body.next}`);
    expect(rest.body.items.map((i: ApiBody) => i.payload.n ?? i.name)).toEqual([2, "session.started"]);
    expect((await plane().api("/api/runs/run-a/timeline?after=bogus")).status).toBe(400);
  });

  it("shows handlers with heartbeat age, priority, failure mode and recent error rate", async () => {
    const { nc, names } = plane().env;
    const served = await serveHook(
      { nc, names },
      "UserPromptSubmit",
      { name: "guard", priority: 5, failureMode: "closed" },
      () => {
        throw new Error("boom");
      },
    );
    try {
      await waitFor(() =>
        plane()
          .tools.dispatcher.handlers()
          .some((h) => h.name === "guard"),
      );
      const hooks = createHookClient(nc, names);
      await hooks
        .invoke("UserPromptSubmit", { user_input: "hi" }, {}, { timeoutMs: 10_000 })
        .catch(() => undefined);
      let row: ApiBody;
      await waitFor(async () => {
        const r = await plane().api("/api/handlers");
        row = r.body.items.find((h: ApiBody) => h.name === "guard");
        return row?.recent_calls >= 1;
      }, 15_000);
      expect(row).toMatchObject({
        hook: "UserPromptSubmit",
        priority: 5,
        failure_mode: "closed",
        recent_errors: 1,
        error_rate: 1,
      });
      expect(row.heartbeat_age_ms).toBeGreaterThanOrEqual(0);
      ConsoleHandlersPageSchema.parse((await plane().api("/api/handlers")).body);
      expect(row.lease_expired).toBe(false);
    } finally {
      await served.close();
    }
  });

  it("shows recorder lag per stream, by the formula of the metric", async () => {
    const r = await plane().api("/api/recorder");
    expect(r.status).toBe(200);
    ConsoleRecorderSchema.parse(r.body);
    expect(r.body.streams.map((s: ApiBody) => [s.stream, s.present])).toEqual([
      [plane().env.names.eventsStream, true],
      [plane().env.names.timelineStream, true],
    ]);
    for (const s of r.body.streams) {
      expect(s.lag).toBeGreaterThanOrEqual(0);
      expect(s.lag).toBeLessThanOrEqual(s.stream_last_seq);
    }
  });
});
