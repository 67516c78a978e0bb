import { RequestFailedError, requestJson } from "@geode/bus";
import {
  AUDIT_LOGS,
  type AuditHealth,
  type AuditLogName,
  type ConsoleAudit,
  type ConsoleAuditLog,
  HealthLeg,
  isMalformedReply,
} from "@geode/contracts";
import { jetstreamManager } from "@nats-io/jetstream";
import { sql } from "kysely";
import type { ConsoleDeps, Route } from "./console-route.js";
import { ApiError, sendJson } from "./http-io.js";

/** How long the view waits for the notary's health reply before it says `down`. */
const HEALTH_TIMEOUT_MS = 1_500;
/** A checkpoint older than this many intervals while its stream grew: the notary is behind. */
const BEHIND_INTERVALS = 3;
/** The interval judged by while no notary answers: `GEODE_AUDIT_CHECKPOINT_MS`'s default. */
const DEFAULT_CHECKPOINT_MS = 5_000;
/** PostgreSQL's codes for a schema or table that is not there (the notary has not created it yet). */
const NOT_THERE = new Set(["3F000", "42P01"]);

interface LogRow {
  log: string;
  first_seq: string;
  size: string;
  last_seq: string;
  gaps: string;
  last_gap_from: string | null;
  last_gap_to: string | null;
}

interface CheckpointRow {
  log: string;
  size: string;
  root: string;
  note: string;
  signed_at: string;
}

/** The key name on a signed note's first signature line (`— {name} {base64}`), or "" when none. */
function noteKeyName(note: string): string {
  const line = note.split("\n").find((l) => l.startsWith("\u2014 "));
  return line?.split(" ")[1] ?? "";
}

/** The notary's health (`active` or `standby`), or null when none answered in time. */
async function notaryHealth(d: ConsoleDeps): Promise<AuditHealth | null> {
  try {
    const reply = await requestJson(
      d.conn,
      d.conn.names.health("notary"),
      {},
      { timeoutMs: HEALTH_TIMEOUT_MS, reply: HealthLeg.reply },
    );
    return reply.audit ?? null;
  } catch (err) {
    if (err instanceof RequestFailedError || isMalformedReply(err)) return null;
    d.log.warn({ err }, "notary health unreadable");
    return null;
  }
}

/** Each log's stored row and latest checkpoint; empty maps while the notary never ran. */
async function readAuditTables(d: ConsoleDeps) {
  const p = d.projection;
  if (!p) throw new ApiError(503, "unavailable", d.noProjection);
  const logs = (t: string) => sql.id(p.ns, t);
  try {
    const [rows, checkpoints] = await Promise.all([
      sql<LogRow>`select log, first_seq, size, last_seq, gaps, last_gap_from, last_gap_to
        from ${logs("audit_logs")}`.execute(p.db),
      sql<CheckpointRow>`select distinct on (log) log, size, root, note, signed_at
        from ${logs("audit_checkpoints")} order by log, size desc`.execute(p.db),
    ]);
    return {
      rows: new Map(rows.rows.map((r) => [r.log, r])),
      checkpoints: new Map(checkpoints.rows.map((c) => [c.log, c])),
    };
  } catch (err) {
    const code = (err as { code?: string }).code ?? "";
    if (NOT_THERE.has(code))
      return { rows: new Map<string, LogRow>(), checkpoints: new Map<string, CheckpointRow>() };
    d.log.warn({ err }, "audit tables unreadable");
    throw new ApiError(
      503,
      "unavailable",
      `the audit tables could not be read: their database (Postgres, or the embedded one geode up serves) is unreachable: start the plane with \`geode up\`, or check DATABASE_URL`,
    );
  }
}

/** The last sequence of each stream; null for a stream that is not there. */
async function streamLastSeqs(d: ConsoleDeps): Promise<Map<AuditLogName, number | null>> {
  const jsm = await jetstreamManager(d.conn.nc, { checkAPI: false });
  const out = new Map<AuditLogName, number | null>();
  await Promise.all(
    AUDIT_LOGS.map(async (log) => {
      const stream = d.conn.names.auditStream(log);
      const last = await jsm.streams.info(stream).then(
        (si) => si.state.last_seq,
        (err: unknown) => {
          if ((err as { code?: string | number }).code === 404 || /stream not found/i.test(String(err)))
            return null;
          throw new ApiError(
            503,
            "unavailable",
            `the stream ${stream} could not be read from NATS: ${String(err)}`,
          );
        },
      );
      out.set(log, last);
    }),
  );
  return out;
}

/**
 * `GET /api/audit` (DESIGN section 20): each log's latest checkpoint (size, age, key name), the
 * gaps the notary recorded, and whether it fell behind (its checkpoint older than 3 × the interval
 * while the stream grew; judged by the default interval while no notary answers) or is down;
 * `alerts` says each gap and each log behind in one sentence (the page's red banner).
 */
export const AUDIT_ROUTES: Route[] = [
  {
    method: "GET",
    pattern: /^\/api\/audit$/,
    async handle(d, r) {
      const [tables, lastSeqs, health] = await Promise.all([
        readAuditTables(d),
        streamLastSeqs(d),
        notaryHealth(d),
      ]);
      const now = Date.now();
      const reported = health?.checkpoint_ms ?? null;
      const interval = reported ?? DEFAULT_CHECKPOINT_MS;
      const alerts: string[] = [];
      const logs = AUDIT_LOGS.map((log): ConsoleAuditLog => {
        const row = tables.rows.get(log);
        const cp = tables.checkpoints.get(log);
        const streamLast = lastSeqs.get(log) ?? null;
        const firstSeq = row ? Number(row.first_seq) : 1;
        const checkpoint = cp
          ? {
              size: Number(cp.size),
              root_hash: cp.root,
              key_name: noteKeyName(cp.note),
              signed_at: Number(cp.signed_at),
              age_ms: Math.max(0, now - Number(cp.signed_at)),
            }
          : null;
        // The stream sequence the checkpoint reaches; the stream grew when it has more.
        const covered = firstSeq + (checkpoint?.size ?? 0) - 1;
        const grew = streamLast !== null && streamLast > covered;
        // A notary that never signed is not behind (nothing to fall behind from); one that did and
        // then stopped answering is, once its last checkpoint ages past the limit.
        const behind = checkpoint !== null && grew && checkpoint.age_ms > BEHIND_INTERVALS * interval;
        const gaps = row ? Number(row.gaps) : 0;
        const lastGap =
          row?.last_gap_from != null && row.last_gap_to != null
            ? { from_seq: Number(row.last_gap_from), to_seq: Number(row.last_gap_to) }
            : null;
        if (gaps > 0)
          alerts.push(
            `Audit log ${log}: ${gaps === 1 ? "1 stream message is" : `${gaps} stream messages are`} gone (deleted)${
              lastGap ? `, latest sequences ${lastGap.from_seq}..${lastGap.to_seq}` : ""
            }. The record is not whole; \`geode audit verify\` names each.`,
          );
        if (behind && checkpoint)
          alerts.push(
            `Audit log ${log}: the notary ${health ? "is behind" : "is not answering"}: its latest checkpoint is ${Math.round(checkpoint.age_ms / 1000)} s old (over ${BEHIND_INTERVALS} × ${interval} ms) while the stream grew to sequence ${streamLast}.`,
          );
        return {
          log,
          origin: d.conn.names.auditLog(log),
          stream: d.conn.names.auditStream(log),
          size: row ? Number(row.size) : 0,
          last_seq: row ? Math.max(0, Number(row.last_seq)) : 0,
          stream_last_seq: streamLast,
          gaps,
          last_gap: lastGap,
          checkpoint,
          behind,
        };
      });
      const notary = !health ? "down" : health.active ? "active" : "standby";
      sendJson(r.res, 200, { notary, checkpoint_ms: reported, logs, alerts } satisfies ConsoleAudit);
    },
  },
];
