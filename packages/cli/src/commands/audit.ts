import { parseArgs } from "node:util";
import { loadConfig } from "@geode/bus";
import { normalizeRow, sessionAgentKinds } from "@geode/projection";
import { type CommandModule, intOption } from "../command.js";
import { openExistingProjection } from "../projection-from-env.js";
import { renderTable } from "../render-table.js";

const DEFAULT_LIMIT = 20;

/**
 * `geode audit [--session ID] [--limit N] [--json]`: the latest `extension_invocations` rows of the
 * namespace (every hook handler and join point call, payload-free), oldest of them first, each with
 * the agent kind of its session (from the session's `session_started`; `-` for a runtime's). The
 * embedded PGlite is read through its owner, like `replay` and `prune`; in a folder without one
 * (and no DATABASE_URL) it says how to point at the plane's instead of creating an empty one.
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
    const projection = await openExistingProjection(config, "geode audit", io.err);
    if (!projection) return 1;
    try {
      let query = projection.db
        .selectFrom("extension_invocations")
        .select(["stream_seq", "ts", "session_id", "surface", "name", "extension", "status", "latency_ms"])
        .orderBy("stream_seq", "desc")
        .limit(limit);
      if (values.session !== undefined) query = query.where("session_id", "=", values.session);
      const found = (await query.execute()).map(normalizeRow).reverse();
      const kinds = await sessionAgentKinds(projection.db, [...new Set(found.map((r) => r.session_id))]);
      const rows = found.map((r) => ({ ...r, agent_kind: kinds.get(r.session_id) ?? null }));
      if (values.json) {
        io.out(`${JSON.stringify(rows)}\n`);
        return 0;
      }
      if (rows.length === 0) {
        const scope = values.session === undefined ? "" : ` for session ${values.session}`;
        io.out(`no extension invocations recorded in namespace ${config.namespace}${scope}\n`);
        return 0;
      }
      io.out(
        renderTable(
          ["time", "session", "agent", "surface", "name", "extension", "status", "latency"],
          rows.map((r) => [
            new Date(r.ts).toISOString().replace("T", " ").slice(0, 23),
            r.session_id,
            r.agent_kind ?? "-",
            r.surface,
            r.name,
            r.extension,
            r.status,
            `${r.latency_ms} ms`,
          ]),
        ),
      );
      return 0;
    } finally {
      await projection.close();
    }
  },
};
