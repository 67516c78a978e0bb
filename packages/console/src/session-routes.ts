import {
  type ConsoleHandlerRemoved,
  type ConsoleParkedTurn,
  ConsoleSessionsQuerySchema,
  ConsoleStatsQuerySchema,
  type HookName,
  HookNameSchema,
} from "@geode/contracts";
import type { ConsoleDeps, Route } from "./console-route.js";
import { hookStats } from "./hook-stats.js";
import { ApiError, badRequest, paged, pageOf, readQuery, sendJson } from "./http-io.js";
import { recorderLag } from "./recorder-lag.js";
import { type ConsoleProjection, listSessions } from "./session-list.js";
import { sessionStory } from "./session-story.js";

/** PostgreSQL's codes for a schema or table that is not there (the recorder has not created it yet). */
const NOT_THERE = new Set(["3F000", "42P01"]);

/** A database that cannot be reached: refused or lost connections, PostgreSQL shutting down or starting. */
function isUnreachable(code: string): boolean {
  return /^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EHOSTUNREACH|ENOTFOUND|08\w{3}|57P0[1-3])$/.test(code);
}

/** What to do when the activity-recorder is silent. */
const START_PLANE = "start the plane with `geode up`";

/** `; the activity-recorder is not answering health: start …` when it does not answer, else "". */
async function recorderSilence(d: ConsoleDeps): Promise<string> {
  try {
    await d.conn.nc.request(d.conn.names.health("activity-recorder"), "", { timeout: 2_000 });
    return "";
  } catch {
    return `; the activity-recorder is not answering health: ${START_PLANE}`;
  }
}

/**
 * Runs a read of the projection: none, one not created yet, or one unreachable is a 503 that says
 * which part is down (the projection, its database, the activity-recorder that writes it) and how
 * to start it.
 */
export async function fromProjection<T>(
  d: ConsoleDeps,
  read: (p: ConsoleProjection) => Promise<T>,
): Promise<T> {
  if (!d.projection) throw new ApiError(503, "unavailable", d.noProjection);
  try {
    return await read(d.projection);
  } catch (err) {
    if (NOT_THERE.has((err as { code?: string }).code ?? ""))
      throw new ApiError(
        503,
        "unavailable",
        `the projection of this namespace is not there yet (the activity-recorder creates it)${await recorderSilence(d)}`,
      );
    if (isUnreachable((err as { code?: string }).code ?? "") || /Connection terminated/.test(String(err)))
      throw new ApiError(
        503,
        "unavailable",
        `the projection could not be read: its database (Postgres, or the embedded one geode up serves) is unreachable: ${START_PLANE}, or check DATABASE_URL`,
      );
    throw err;
  }
}

/** A path segment as text: valid URL encoding, 1..`max` characters, no control characters. */
function segment(raw: string | undefined, name: string, max = 256): string {
  let text: string;
  try {
    text = decodeURIComponent(raw ?? "");
  } catch {
    throw badRequest(`${name} is not valid URL encoding`);
  }
  if (text.length === 0 || text.length > max || /[\u0000-\u001f\u007f]/.test(text))
    throw badRequest(`${name} must be 1 to ${max} characters without control characters`);
  return text;
}

/** Which of `ids` the sessions bucket holds as paused (awaiting their verification's owner). */
async function pausedAmong(d: ConsoleDeps, ids: string[]): Promise<Set<string>> {
  const records = await Promise.all(ids.map((id) => d.sessions.get(id).catch(() => null)));
  return new Set(ids.filter((_, i) => records[i]?.status === "paused"));
}

/** `GET /api/sessions?status=paused`: root turns parked for their external owner. */
async function parkedTurns(d: ConsoleDeps, url: URL) {
  const parked = await d.attempts.parked();
  const rows = parked.map(
    (t): ConsoleParkedTurn => ({
      session_id: t.session_id,
      turn_id: t.turn_id,
      policy_action: t.pending!.policy_action,
      verify_attempt: t.pending!.attempt,
      pending_text: t.pending!.text,
      candidate_sha256: t.pending!.candidate_sha256,
      updated_at: t.updated_at,
    }),
  );
  return paged(rows, pageOf(url));
}

/** The session views' routes: the list, one session's story, the charts' stats, and a dead handler's removal. */
export const SESSION_ROUTES: Route[] = [
  {
    method: "GET",
    pattern: /^\/api\/sessions$/,
    async handle(d, r) {
      const query = readQuery(r.url, ConsoleSessionsQuerySchema);
      if (query.status === "paused") return sendJson(r.res, 200, await parkedTurns(d, r.url));
      if (query.offset !== undefined) throw badRequest("offset pages status=paused only; use cursor");
      if (query.since !== undefined && query.until !== undefined && query.since > query.until)
        throw badRequest("since must not be after until");
      const page = await fromProjection(d, (p) => listSessions(p, query, (ids) => pausedAmong(d, ids)));
      sendJson(r.res, 200, page);
    },
  },
  {
    method: "GET",
    pattern: /^\/api\/sessions\/([^/]+)\/story$/,
    async handle(d, r) {
      const sessionId = segment(r.params[0], "session_id");
      if (r.url.search !== "") throw badRequest("the story takes no query parameters");
      const story = await fromProjection(d, (p) =>
        sessionStory(p, sessionId, async (id) => (await pausedAmong(d, [id])).has(id)),
      );
      if (!story) throw new ApiError(404, "invalid_request", `no session ${sessionId} in the projection`);
      sendJson(r.res, 200, story);
    },
  },
  {
    method: "GET",
    pattern: /^\/api\/stats$/,
    async handle(d, r) {
      const { window = "1h" } = readQuery(r.url, ConsoleStatsQuerySchema);
      const lag = await recorderLag(d.conn.nc, d.conn.names);
      sendJson(r.res, 200, await fromProjection(d, (p) => hookStats(p, window, lag)));
    },
  },
  {
    method: "DELETE",
    pattern: /^\/api\/handlers\/([^/]+)\/([^/]+)$/,
    async handle(d, r) {
      const hookName = segment(r.params[0], "hook", 64);
      const hook = HookNameSchema.safeParse(hookName);
      if (!hook.success)
        throw badRequest(`hook must be one of the public hooks, got ${hookName.slice(0, 64)}`);
      const name = segment(r.params[1], "name", 128);
      const outcome = await d.handlers.removeExpired(hook.data as HookName, name);
      if (outcome === "not_found")
        throw new ApiError(404, "invalid_request", `no handler ${name} is registered for ${hook.data}`);
      if (outcome === "live")
        throw new ApiError(
          409,
          "invalid_request",
          `handler ${name} of ${hook.data} is live: its lease has not expired`,
          {
            why: "lease_live",
          },
        );
      d.log.info({ hook: hook.data, handler: name, operator: r.caller.operator }, "dead handler removed");
      sendJson(r.res, 200, { hook: hook.data, name, removed: true } satisfies ConsoleHandlerRemoved);
    },
  },
];
