import { type ConsoleStats, STATS_WINDOWS } from "@geode/contracts";
import { sql } from "kysely";
import type { RecorderLag } from "./recorder-lag.js";
import { type ConsoleProjection, tables } from "./session-list.js";

/** Buckets per window: a minute each over the hour. */
const BUCKETS = 60;

type StatsWindow = keyof typeof STATS_WINDOWS;

interface BucketRow {
  bucket: string | number;
  agent: string;
  hook: string;
  calls: string | number;
  blocks: string | number;
}

interface LatencyRow {
  bucket: string | number | null;
  hook: string | null;
  calls: string | number;
  p50: string | number | null;
  p95: string | number | null;
  p99: string | number | null;
}

/** One series per key, a value per bucket. */
function seriesBy(rows: BucketRow[], keyOf: (r: BucketRow) => string, buckets: number) {
  const out = new Map<string, { calls: number[]; blocks: number[] }>();
  for (const r of rows) {
    const key = keyOf(r);
    const s = out.get(key) ?? {
      calls: new Array<number>(buckets).fill(0),
      blocks: new Array<number>(buckets).fill(0),
    };
    out.set(key, s);
    const i = Number(r.bucket);
    s.calls[i]! += Number(r.calls);
    s.blocks[i]! += Number(r.blocks);
  }
  return [...out.entries()].sort(([a], [b]) => a.localeCompare(b));
}

/**
 * `GET /api/stats`: the audited hook handler calls (`extension_invocations`, surface `hook`) of the
 * last `window`, in equal buckets, by agent (each session's `session_started`; `runtime` for a
 * runtime's own sessions) and by hook, with their blocks (`block` or `deny`) and latency
 * percentiles; and the recorder's lag.
 */
export async function hookStats(
  p: ConsoleProjection,
  window: StatsWindow,
  lag: RecorderLag[],
  now = Date.now(),
): Promise<ConsoleStats> {
  const windowMs = STATS_WINDOWS[window];
  const bucketMs = windowMs / BUCKETS;
  const from = now - windowMs;
  const t = tables(p.ns);
  const calls = sql`
    select i.ts, i.name, i.status, i.latency_ms, least(${BUCKETS - 1}, floor((i.ts - ${from}) / ${bucketMs}))::int as bucket,
           coalesce(a.agent, 'runtime') as agent
    from ${t.invocations} i
    left join (
      select session_id, (array_agg(payload->>'agent' order by ts desc))[1] as agent
      from ${t.activity} where event = 'session_started' group by session_id
    ) a on a.session_id = i.session_id
    where i.surface = 'hook' and i.ts >= ${from} and i.ts <= ${now}`;
  const [counted, latency] = await Promise.all([
    sql<BucketRow>`
      select bucket, agent, name as hook, count(*) as calls,
             count(*) filter (where status in ('block', 'deny')) as blocks
      from (${calls}) c group by bucket, agent, name`.execute(p.db),
    sql<LatencyRow>`
      select bucket, name as hook, count(*) as calls,
             percentile_cont(0.5) within group (order by latency_ms) as p50,
             percentile_cont(0.95) within group (order by latency_ms) as p95,
             percentile_cont(0.99) within group (order by latency_ms) as p99
      from (${calls}) c group by grouping sets ((bucket), (name))`.execute(p.db),
  ]);
  const series = {
    p50: [] as Array<number | null>,
    p95: [] as Array<number | null>,
    p99: [] as Array<number | null>,
  };
  for (const k of ["p50", "p95", "p99"] as const) series[k] = new Array(BUCKETS).fill(null);
  const byHookLatency: ConsoleStats["latency_by_hook"] = [];
  const round = (v: string | number | null) => Math.round(Number(v ?? 0) * 100) / 100;
  for (const r of latency.rows) {
    if (r.hook !== null)
      byHookLatency.push({
        hook: r.hook,
        calls: Number(r.calls),
        p50: round(r.p50),
        p95: round(r.p95),
        p99: round(r.p99),
      });
    else if (r.bucket !== null)
      for (const k of ["p50", "p95", "p99"] as const) series[k][Number(r.bucket)] = round(r[k]);
  }
  return {
    window,
    window_ms: windowMs,
    bucket_ms: bucketMs,
    buckets: Array.from({ length: BUCKETS }, (_, i) => from + i * bucketMs),
    by_agent: seriesBy(counted.rows, (r) => r.agent, BUCKETS).map(([agent, s]) => ({ agent, ...s })),
    by_hook: seriesBy(counted.rows, (r) => r.hook, BUCKETS).map(([hook, s]) => ({ hook, ...s })),
    latency: series,
    latency_by_hook: byHookLatency.sort((a, b) => a.hook.localeCompare(b.hook)),
    recorder: lag.map((l) => ({ stream: l.stream, lag: l.lag })),
  };
}
