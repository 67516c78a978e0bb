import { parseArgs } from "node:util";
import { sanitizeText } from "@geode/contracts";
import { type AuditEntry, auditTrail } from "@geode/projection";
import { loadConfig } from "@geode/service";
import { type CommandModule, intOption } from "../command.js";
import { printable } from "../printable.js";
import { openExistingProjection } from "../projection-from-env.js";
import { renderTable } from "../render-table.js";

const DEFAULT_LIMIT = 20;
/** The recorder keeps 512 characters of a reason; `--json` prints them all, the table this many. */
const STORED_REASON_CHARS = 512;
const TABLE_REASON_CHARS = 80;

/** An entry as printed: every text from the projection made safe for a terminal again. */
function printed(e: AuditEntry): AuditEntry {
  const text = (v: string) => printable(v);
  const maybe = (v: string | null) => (v === null ? null : text(v));
  return {
    ...e,
    session_id: text(e.session_id),
    tool_call_id: text(e.tool_call_id),
    surface: text(e.surface),
    name: text(e.name),
    extension: text(e.extension),
    status: text(e.status),
    agent: maybe(e.agent),
    agent_kind: maybe(e.agent_kind),
    reason: e.reason === null ? null : printable(sanitizeText(e.reason, STORED_REASON_CHARS)),
    approval: e.approval && { decision: text(e.approval.decision), approver: maybe(e.approval.approver) },
  };
}

/** `name (kind)` of the session's gateway agent; `-` for a runtime's session. */
function agentCell(e: AuditEntry): string {
  if (e.agent && e.agent_kind) return `${e.agent} (${e.agent_kind})`;
  return e.agent ?? e.agent_kind ?? "-";
}

/** What the person a call was sent to decided: `allow by alice`; `-` for a call no person saw. */
function approvalCell(e: AuditEntry): string {
  if (!e.approval) return "-";
  if (e.approval.decision === "none") return "nobody answered";
  return `${e.approval.decision} by ${e.approval.approver ?? "?"}`;
}

/**
 * `geode audit [--session ID] [--limit N] [--json]`: the latest `extension_invocations` rows of the
 * namespace (every hook handler and join point call), oldest of them first, each with its reason
 * (a block's, or an audit-mode set's `audit: would block: …`), the session's agent and kind (from
 * its `session_started`; `-` for a runtime's), and for a call a handler sent to a person what they
 * decided. The table cuts a reason to 80 characters, `--json` carries the stored 512. The
 * embedded PGlite is read through its owner, like `replay` and `prune`; with no plane to read
 * from (and no DATABASE_URL) it says how to point at one instead of creating an empty one.
 */
export const auditCommand: CommandModule = {
  async run(args, io) {
    const { values } = parseArgs({
      args,
      options: {
        session: { type: "string" },
        limit: { type: "string" },
        json: { type: "boolean", default: false },
      },
    });
    const limit = intOption(values.limit, "limit", 1, 10_000) ?? DEFAULT_LIMIT;
    const config = loadConfig(io.env);
    const projection = await openExistingProjection(config, "geode audit", io);
    if (!projection) return 1;
    try {
      const rows = (await auditTrail(projection.db, { session: values.session, limit })).map(printed);
      if (values.json) {
        io.out(`${JSON.stringify(rows)}\n`);
        return 0;
      }
      if (rows.length === 0) {
        const scope = values.session === undefined ? "" : ` for session ${printable(values.session)}`;
        io.out(`no extension invocations recorded in namespace ${config.namespace}${scope}\n`);
        return 0;
      }
      io.out(
        renderTable(
          [
            "time",
            "session",
            "agent",
            "surface",
            "name",
            "extension",
            "status",
            "latency",
            "person",
            "reason",
          ],
          rows.map((r) => [
            new Date(r.ts).toISOString().replace("T", " ").slice(0, 23),
            r.session_id,
            agentCell(r),
            r.surface,
            r.name,
            r.extension,
            r.status,
            `${r.latency_ms} ms`,
            approvalCell(r),
            r.reason === null ? "-" : printable(r.reason, TABLE_REASON_CHARS),
          ]),
        ),
      );
      return 0;
    } finally {
      await projection.close();
    }
  },
};
