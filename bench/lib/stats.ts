/** Small helpers shared by the benchmarks: timing, percentiles and a table for people. */
import { loadavg } from "node:os";

function nowUs(): number {
  return Number(process.hrtime.bigint()) / 1_000;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const idx = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[idx]!;
}

export interface LatencySummary {
  n: number;
  medianUs: number;
  p99Us: number;
  meanUs: number;
}

export function summarize(samplesUs: number[]): LatencySummary {
  const s = [...samplesUs].sort((a, b) => a - b);
  return {
    n: s.length,
    medianUs: percentile(s, 50),
    p99Us: percentile(s, 99),
    meanUs: s.reduce((a, b) => a + b, 0) / Math.max(1, s.length),
  };
}

/** Runs `fn` sequentially `n` times after `warmup` runs and returns per-call latency in µs. */
export async function measureSequential(
  n: number,
  fn: () => Promise<unknown> | unknown,
  warmup = Math.min(200, n),
): Promise<LatencySummary> {
  for (let i = 0; i < warmup; i++) await fn();
  const samples: number[] = new Array(n);
  for (let i = 0; i < n; i++) {
    const t0 = nowUs();
    await fn();
    samples[i] = nowUs() - t0;
  }
  return summarize(samples);
}

/**
 * Runs the cases in turn, `perRound` sequential calls of each, `rounds` times, and returns each
 * case's per-call latencies in µs into `samples` (appended, so epochs can add to them). Taking
 * turns makes a shared machine's drift hit every case alike, so their ratios stay meaningful.
 * `rotate`: each round starts one case later, so work a case leaves behind (a batch it sends a
 * little later) falls on every other case alike, not always on the one after it.
 */
export async function measureInterleaved(
  cases: ReadonlyArray<() => Promise<unknown>>,
  rounds: number,
  perRound: number,
  samples: number[][] = cases.map(() => []),
  options: { rotate?: boolean } = {},
): Promise<number[][]> {
  for (let round = 0; round < rounds; round++)
    for (let j = 0; j < cases.length; j++) {
      const i = options.rotate ? (j + round) % cases.length : j;
      const fn = cases[i]!;
      for (let k = 0; k < perRound; k++) {
        const t0 = nowUs();
        await fn();
        samples[i]!.push(nowUs() - t0);
      }
    }
  return samples;
}

/**
 * Warms every case up (`warmup` calls each), then measures about `sequential` calls per case with
 * the cases taking turns `perRound` calls at a time (see `measureInterleaved`); returns each case's
 * samples and the number of rounds.
 */
export async function warmThenInterleave(
  cases: ReadonlyArray<() => Promise<unknown>>,
  options: { warmup: number; sequential: number; perRound: number },
): Promise<{ samples: number[][]; rounds: number }> {
  progress(`warm-up, ${options.warmup} calls per case`);
  for (const fn of cases) for (let i = 0; i < options.warmup; i++) await fn();
  const rounds = Math.ceil(options.sequential / options.perRound);
  progress(`${rounds} rounds of ${options.perRound} sequential calls per case`);
  return { samples: await measureInterleaved(cases, rounds, options.perRound), rounds };
}

/** Runs `total` calls with `concurrency` callers; returns calls per second. */
export async function measureThroughput(
  total: number,
  concurrency: number,
  fn: () => Promise<unknown>,
): Promise<number> {
  let next = 0;
  const t0 = nowUs();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) {
        next++;
        await fn();
      }
    }),
  );
  return total / ((nowUs() - t0) / 1e6);
}

export function fmtUs(us: number): string {
  if (!Number.isFinite(us)) return "-";
  return us >= 1000 ? `${(us / 1000).toFixed(2)} ms` : `${us.toFixed(1)} µs`;
}

/** The machine's 1, 5 and 15 minute load averages: numbers from a shared machine mean little without them. */
export function fmtLoad(): string {
  return loadavg()
    .map((l) => l.toFixed(2))
    .join(" ");
}

export function fmtRate(perSec: number): string {
  return `${Math.round(perSec).toLocaleString("en-US")}/s`;
}

/** Renders rows as a Markdown table (readable in a terminal and pasteable into docs). */
export function table(headers: string[], rows: Array<Array<string | number>>): string {
  const cells = [headers, ...rows.map((r) => r.map(String))];
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? "").length)));
  const line = (r: string[]) => `| ${r.map((c, i) => c.padEnd(widths[i]!)).join(" | ")} |`;
  return [
    line(cells[0]!),
    `| ${widths.map((w) => "-".repeat(w)).join(" | ")} |`,
    ...cells.slice(1).map(line),
  ].join("\n");
}

/** Progress on stderr so the table on stdout stays clean. */
export function progress(label: string): void {
  process.stderr.write(`… ${label}\n`);
}
