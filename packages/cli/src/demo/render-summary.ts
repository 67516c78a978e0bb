import { renderTable } from "../render-table.js";
import type { DemoResult } from "./run-demo.js";

/** The demo's closing summary, for people. */
export function renderSummary(r: DemoResult): string {
  const s = r.session;
  const story = s.steps.map((st, i) => `${String(i + 1).padStart(2)}. ${st.what} — ${st.outcome}`).join("\n");
  const rows = r.surfaces.map((row) => [
    row.surface === "hook" ? "hook" : "middleware",
    row.name,
    row.extensions.join(", ") || "-",
    String(row.calls),
    Object.entries(row.statuses)
      .map(([k, v]) => `${k} ${v}`)
      .join(", ") || "-",
    row.calls > 0 ? `${row.medianMs.toFixed(1)} ms` : "-",
  ]);
  const ran = r.surfaces.filter((x) => x.calls > 0).length;
  const ns = r.namespace;
  return [
    "",
    "What happened",
    story,
    "",
    `Every hook and join point, as audited in the Postgres projection (${ran}/${r.surfaces.length} ran)`,
    renderTable(["surface", "name", "handlers / middleware", "calls", "statuses", "median"], rows).trimEnd(),
    "",
    "Recorded",
    `  Postgres (${r.database}) activity rows of run ${s.runId}: ${r.postgresRows}`,
    `  ${r.jsonlFile}: ${r.jsonlRows} rows${r.postgresRows === r.jsonlRows ? " (equal)" : " (DIFFERENT)"}`,
    `  fs.write executed ${r.writeExecutions} time(s); its retry was ${s.retry.status} from the receipt`,
    `  finished in ${r.seconds.toFixed(1)} s`,
    "",
    "Look next",
    `  GEODE_NAMESPACE=${ns} pnpm geode events tail            # live events, one line each`,
    `  GEODE_NAMESPACE=${ns} pnpm geode replay --rebuild       # rebuild the projection from the streams`,
    `  GEODE_NAMESPACE=${ns} pnpm geode receipts ls            # the durable admission receipts`,
    "",
  ].join("\n");
}
