import { createHash } from "node:crypto";
import {
  type ConsoleApprovalAnswered,
  ConsoleApprovalAnswerSchema,
  type ConsoleReceipt,
  type ConsoleReceiptResolved,
  ConsoleReceiptResolveSchema,
  type ConsoleSessionResolved,
  ConsoleSessionResolveSchema,
  type ConsoleTimelinePage,
  isReceiptRunning,
  type ReceiptState,
} from "@geode/contracts";
import { resolveReceipt } from "@geode/state";
import { AGENT_ROUTES } from "./agent-routes.js";
import { withDecidingPolicies } from "./approval-policies.js";
import { AUDIT_ROUTES } from "./audit-status.js";
import type { Caller } from "./console-auth.js";
import type { ApiRequest, ConsoleDeps, Route } from "./console-route.js";
import { handlerViews, recentHandlerCalls, webhookHosts } from "./handler-stats.js";
import { ApiError, badRequest, paged, pageOf, readBody, sendJson } from "./http-io.js";
import { LLM_ROUTES } from "./llm-spend.js";
import { MCP_ROUTES } from "./mcp-servers.js";
import { POLICY_ROUTES } from "./policy-routes.js";
import { recorderLag } from "./recorder-lag.js";
import { cursorToken, followRunTimeline, parseCursorToken, readRunTimeline } from "./run-timeline.js";
import { SESSION_ROUTES } from "./session-routes.js";

const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest("hex");

/**
 * The operator an action is recorded under: the name a page signed in with, else the body's
 * `operator` (scripts with the bearer token), else `console`.
 */
function operatorOf(caller: Caller, body: { operator?: string | null | undefined }): string {
  return caller.operator ?? body.operator ?? "console";
}

const RECEIPT_STATES = ["admitted", "completed", "failed"] as const;

/** The console's routes (docs/console.md), with the actions as POSTs next to the lists they act on. */
export const ROUTES: Route[] = [
  {
    method: "GET",
    pattern: /^\/api\/approvals$/,
    async handle(d, r) {
      const page = paged(d.approvals.list(), pageOf(r.url));
      sendJson(r.res, 200, { ...page, items: await withDecidingPolicies(d.projection, page.items) });
    },
  },
  {
    method: "POST",
    pattern: /^\/api\/approvals\/answer$/,
    async handle(d, r) {
      const body = await readBody(r.req, ConsoleApprovalAnswerSchema);
      const { approval_id: id, decision } = body;
      const operator = operatorOf(r.caller, body);
      const reason = body.reason || `${decision} from the console`;
      const request = d.approvals.answer(id, { decision, reason, operator });
      d.log.info({ approval_id: id, decision, operator, tool_name: request.tool_name }, "approval answered");
      sendJson(r.res, 200, {
        approval_id: id,
        decision,
        approver: operator,
      } satisfies ConsoleApprovalAnswered);
    },
  },
  ...SESSION_ROUTES,
  ...POLICY_ROUTES,
  ...AGENT_ROUTES,
  ...MCP_ROUTES,
  ...LLM_ROUTES,
  ...AUDIT_ROUTES,
  {
    method: "POST",
    pattern: /^\/api\/sessions\/resolve$/,
    async handle(d, r) {
      const body = await readBody(r.req, ConsoleSessionResolveSchema);
      const { session_id: sessionId, turn_id: turnId, action } = body;
      const instruction = body.instruction ?? undefined;
      const operator = operatorOf(r.caller, body);
      if (action === "revise" && !instruction?.trim()) throw badRequest("revise requires an instruction");
      const correlation = { session_id: sessionId, turn_id: turnId };
      const reply = await d.verify.resolve({
        correlation,
        action,
        ...(action === "revise" ? { instruction } : {}),
      });
      await d.events.emit(
        "approval_transition",
        {
          subject: "verification",
          action,
          operator,
          policy_action: reply.policy_action,
          verify_attempt: reply.verify_attempt,
          ...(instruction ? { instruction_sha256: sha256(instruction) } : {}),
        },
        correlation,
      );
      d.log.info({ session_id: sessionId, turn_id: turnId, action, operator }, "paused turn resolved");
      sendJson(r.res, 200, {
        session_id: sessionId,
        turn_id: turnId,
        action,
        operator,
        policy_action: reply.policy_action,
        deliver: reply.deliver,
      } satisfies ConsoleSessionResolved);
    },
  },
  {
    method: "GET",
    pattern: /^\/api\/receipts$/,
    async handle(d, r) {
      const state = r.url.searchParams.get("state");
      if (state !== null && !(RECEIPT_STATES as readonly string[]).includes(state))
        throw badRequest("state must be admitted, completed or failed");
      const now = Date.now();
      const listed = await d.receipts.list((state ?? undefined) as ReceiptState | undefined);
      const rows = listed.map(
        (rc): ConsoleReceipt => ({
          key: rc.key,
          state: rc.state,
          tool_name: rc.tool_name,
          running: isReceiptRunning(rc, now),
          lease_until: rc.lease_until ?? null,
          admitted_at: rc.admitted_at,
          completed_at: rc.completed_at,
          status: rc.status,
          correlation: rc.correlation,
          resolution: rc.resolution ?? null,
        }),
      );
      sendJson(r.res, 200, paged(rows, pageOf(r.url)));
    },
  },
  {
    method: "POST",
    pattern: /^\/api\/receipts\/resolve$/,
    async handle(d, r) {
      const body = await readBody(r.req, ConsoleReceiptResolveSchema);
      const { key, as } = body;
      const reason = body.reason || undefined;
      const by = operatorOf(r.caller, body);
      const outcome = await resolveReceipt(
        { receipts: d.receipts, events: d.events },
        { key, as, by, reason },
      );
      if (!outcome.resolved)
        throw new ApiError(outcome.why === "not_found" ? 404 : 409, "invalid_request", outcome.message, {
          why: outcome.why,
        });
      d.log.info({ receipt_key: key, as, operator: by }, "receipt resolved");
      sendJson(r.res, 200, {
        key,
        state: as,
        revision: outcome.revision,
        by,
      } satisfies ConsoleReceiptResolved);
    },
  },
  {
    method: "GET",
    pattern: /^\/api\/runs$/,
    async handle(d, r) {
      sendJson(r.res, 200, paged(await d.runs.list(), pageOf(r.url)));
    },
  },
  {
    method: "GET",
    pattern: /^\/api\/runs\/([^/]+)\/timeline$/,
    async handle(d, r) {
      const runId = runIdOf(r.params[0]);
      const after = r.url.searchParams.get("after");
      const cursor = after === null ? { events: 0, timeline: 0 } : parseCursorToken(after);
      if (!cursor) throw badRequest("after must be a cursor E.T from a previous page");
      const { limit } = pageOf(r.url, 1000);
      const page = await readRunTimeline(d.conn.nc, d.conn.names, runId, cursor, limit);
      sendJson(r.res, 200, {
        run_id: runId,
        items: page.items,
        next: cursorToken(page.next),
        more: page.more,
      } satisfies ConsoleTimelinePage);
    },
  },
  {
    method: "GET",
    pattern: /^\/api\/runs\/([^/]+)\/timeline\/stream$/,
    async handle(d, r) {
      const runId = runIdOf(r.params[0]);
      await streamTimeline(d, r, runId);
    },
  },
  {
    method: "GET",
    pattern: /^\/api\/handlers$/,
    async handle(d, r) {
      const [regs, calls, hooks] = await Promise.all([
        d.handlers.list(),
        recentHandlerCalls(d.conn.nc, d.conn.names),
        d.webhooks.list(),
      ]);
      const views = handlerViews(regs, calls, Date.now(), webhookHosts(hooks));
      sendJson(r.res, 200, paged(views, pageOf(r.url)));
    },
  },
  {
    method: "GET",
    pattern: /^\/api\/recorder$/,
    async handle(d, r) {
      sendJson(r.res, 200, { streams: await recorderLag(d.conn.nc, d.conn.names) });
    },
  },
];

function runIdOf(raw: string | undefined): string {
  let id: string;
  try {
    id = decodeURIComponent(raw ?? "");
  } catch {
    throw badRequest("run_id is not valid URL encoding");
  }
  if (!/^(?!\.)[A-Za-z0-9_.-]{1,128}(?<!\.)$/.test(id))
    throw badRequest("run_id must match [A-Za-z0-9_.-]{1,128}");
  return id;
}

let openStreams = 0;

/**
 * `GET /api/runs/{run_id}/timeline/stream`: server-sent events, one `item` event per timeline
 * entry (its id the cursor, so a reconnecting EventSource resumes with `Last-Event-ID`), from the
 * start of the run or `?after=`, then live as the streams grow.
 */
async function streamTimeline(d: ConsoleDeps, r: ApiRequest, runId: string): Promise<void> {
  const resume = r.req.headers["last-event-id"] ?? r.url.searchParams.get("after");
  const cursor = resume ? parseCursorToken(String(resume)) : { events: 0, timeline: 0 };
  if (!cursor) throw badRequest("Last-Event-ID / after must be a cursor E.T");
  if (openStreams >= d.maxStreams) throw new ApiError(503, "unavailable", "too many live timelines open");
  openStreams++;
  const { res } = r;
  res.writeHead(200, {
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-store",
    "x-content-type-options": "nosniff",
    connection: "keep-alive",
  });
  res.write(": timeline\n\n");
  let follower: { close(): Promise<void> } | null = null;
  const keepAlive = setInterval(() => res.write(": keep-alive\n\n"), 15_000);
  const stop = async () => {
    clearInterval(keepAlive);
    const f = follower;
    follower = null;
    if (f) await f.close().catch(() => undefined);
  };
  let closed = false;
  r.req.on("close", () => {
    if (closed) return;
    closed = true;
    openStreams--;
    void stop();
  });
  try {
    follower = await followRunTimeline(d.conn.nc, d.conn.names, runId, cursor, (item, at) => {
      res.write(`id: ${cursorToken(at)}\nevent: item\ndata: ${JSON.stringify(item)}\n\n`);
    });
    if (closed) await stop();
  } catch (err) {
    d.log.warn({ err, run_id: runId }, "live timeline failed");
    res.end();
  }
}
