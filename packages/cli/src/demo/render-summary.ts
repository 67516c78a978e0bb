import { renderTable } from "../render-table.js";
import { auditLine } from "./demo-audit.js";
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
    `  ${auditLine(r.audit)}`,
    `  finished in ${r.seconds.toFixed(1)} s`,
    "",
    ...lookNext(r),
    "",
  ].join("\n");
}

/** What to run next on a kept namespace, or what was removed. */
function lookNext(r: DemoResult): string[] {
  const ns = r.namespace;
  if (r.removed) {
    const { streams, buckets, schema, runDirs } = r.removed;
    const parts = [`${streams.length} streams`, `${buckets.length} KV buckets`];
    if (schema) parts.push("its Postgres schema");
    if (runDirs.length > 0) parts.push(`${runDirs.length} run folder(s)`);
    return [
      "Cleaned up",
      `  removed namespace ${ns}: ${parts.join(", ")}`,
      "  run 'geode demo --keep' to keep them and look around (events tail, replay, receipts ls)",
    ];
  }
  const env = `GEODE_NAMESPACE=${ns}`;
  return [
    "Look next",
    `  ${env} pnpm geode events tail --from-seq 1   # the events, one line each`,
    `  ${env} pnpm geode replay --rebuild           # rebuild the projection from the streams`,
    `  ${env} pnpm geode audit verify --projection  # check the run's record is whole and unchanged`,
    `  ${env} pnpm geode receipts ls                # the durable admission receipts`,
    `  pnpm geode ns rm ${ns} --yes                   # remove it when done`,
  ];
}
