/**
 * The pure part of `pnpm bench --compare`: reading the figures a benchmark prints, and setting the
 * turns of a before and an after side by side. A benchmark prints for people; its figures are read
 * back from what it prints, so any commit's benchmarks compare with any other's, with no format of
 * their own to agree on:
 * - every Markdown table row (`| label | 7.0 µs | … |`): one figure per cell that is a number with
 *   an optional unit, named `label · column` (a column whose heading repeats is named after the
 *   column before it too);
 * - every other line with a number after `: ` (and before the line's end, `(`, `;`, `,` or `=`)
 *   or a number followed by ` ×`: one figure, the first such number, named by the text before it
 *   (`CPU per call, 1 handler: … 2.15 ×`, `target: … round trips: 3.78 (target ≤ 1.20)`).
 * Times are read into µs, whatever unit each run printed them in.
 */
import { fmtUs, table } from "./stats.js";

/** What a figure's number is: a time (µs, lower is better), a rate (higher is better), or other. */
type Kind = "time" | "rate" | "other";

export interface Figure {
  name: string;
  value: number;
  /** The unit as printed (times: always µs). */
  unit: string;
  kind: Kind;
}

const NUMBER = String.raw`[+-]?\d[\d,]*(?:\.\d+)?`;
const UNIT = String.raw`ns|µs|us|ms|s|×|x|%|\/s|B|KiB|MiB|GiB|MB\/s|GB\/s`;
const CELL = new RegExp(String.raw`^(${NUMBER})\s?(${UNIT})?$`);
const IN_LINE = new RegExp(
  String.raw`(?::\s+(${NUMBER})\s?(${UNIT})?(?=\s*(?:$|[(;,=]))|\s(${NUMBER})\s(×))`,
);
const TO_US: Record<string, number> = { ns: 1e-3, µs: 1, us: 1, ms: 1e3, s: 1e6 };

function figure(name: string, num: string, unit: string | undefined): Figure | null {
  const value = Number(num.replace(/,/g, ""));
  if (!Number.isFinite(value)) return null;
  const u = unit ?? "";
  const scale = TO_US[u];
  if (scale !== undefined) return { name, value: value * scale, unit: "µs", kind: "time" };
  return { name, value, unit: u, kind: u.endsWith("/s") ? "rate" : "other" };
}

const cellsOf = (line: string) =>
  line
    .trim()
    .replace(/^\|/, "")
    .replace(/\|$/, "")
    .split("|")
    .map((c) => c.trim());

/** The figures of one benchmark run's standard output, in the order printed, each name once. */
export function parseFigures(output: string): Figure[] {
  const out: Figure[] = [];
  const seen = new Map<string, number>();
  const push = (f: Figure | null) => {
    if (!f) return;
    const n = (seen.get(f.name) ?? 0) + 1;
    seen.set(f.name, n);
    out.push(n === 1 ? f : { ...f, name: `${f.name} #${n}` });
  };
  const lines = output.split(/\r?\n/);
  let headers: string[] | null = null;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (line.startsWith("|")) {
      const cells = cellsOf(line);
      if (cells.every((c) => /^:?-+:?$/.test(c))) continue;
      const next = lines[i + 1]?.trim() ?? "";
      if (headers === null && next.startsWith("|") && cellsOf(next).every((c) => /^:?-+:?$/.test(c))) {
        headers = cells.map((h, j) => (cells.indexOf(h) < j ? `${h} (${cells[j - 1]})` : h));
        continue;
      }
      const label = cells[0] ?? "";
      for (let j = 1; j < cells.length; j++) {
        const m = CELL.exec(cells[j]!);
        if (m) push(figure(`${label} · ${headers?.[j] ?? `column ${j + 1}`}`, m[1]!, m[2]));
      }
      continue;
    }
    headers = null;
    if (line === "" || line.startsWith("#")) continue;
    const m = IN_LINE.exec(line);
    if (!m) continue;
    const name = line.slice(0, m.index).trim().replace(/:$/, "");
    if (name !== "") push(figure(name, m[1] ?? m[3]!, m[2] ?? m[4]));
  }
  return out;
}

interface Side {
  median: number;
  min: number;
  max: number;
  n: number;
}

export interface Compared {
  name: string;
  unit: string;
  kind: Kind;
  before: Side | null;
  after: Side | null;
  /** (after − before) / before of the medians, in %; NaN when a side is missing or zero. */
  changePct: number;
  /**
   * The change of the medians is larger than the spread (max − min) of either side's turns (two
   * turns a side at least).
   */
  flagged: boolean;
  /** For a time or a rate, whether the flagged change is for the worse. */
  worse: boolean | null;
}

function side(values: number[]): Side | null {
  if (values.length === 0) return null;
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  const median = s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
  return { median, min: s[0]!, max: s[s.length - 1]!, n: s.length };
}

/**
 * Sets the turns of before and after side by side, figure by figure (in the order the after runs
 * printed them, then those only before had). Figures with the same value in every turn of both
 * sides (sizes, counts of calls) are left out: they are the benchmark's settings, not measured.
 */
export function compareTurns(before: Figure[][], after: Figure[][]): Compared[] {
  const order: string[] = [];
  const meta = new Map<string, Figure>();
  const values = new Map<string, { before: number[]; after: number[] }>();
  const add = (runs: Figure[][], which: "before" | "after") => {
    for (const run of runs)
      for (const f of run) {
        if (!values.has(f.name)) {
          order.push(f.name);
          meta.set(f.name, f);
          values.set(f.name, { before: [], after: [] });
        }
        values.get(f.name)![which].push(f.value);
      }
  };
  add(after, "after");
  add(before, "before");
  const out: Compared[] = [];
  for (const name of order) {
    const v = values.get(name)!;
    const all = [...v.before, ...v.after];
    if (v.before.length > 0 && v.after.length > 0 && all.every((x) => x === all[0])) continue;
    const f = meta.get(name)!;
    const [b, a] = [side(v.before), side(v.after)];
    const changePct =
      b && a && b.median !== 0 ? ((a.median - b.median) / Math.abs(b.median)) * 100 : Number.NaN;
    // One turn a side has no spread to measure the change against: nothing is flagged.
    const flagged =
      b !== null &&
      a !== null &&
      Math.min(b.n, a.n) >= 2 &&
      Math.abs(a.median - b.median) > Math.max(b.max - b.min, a.max - a.min);
    const worse =
      !flagged || f.kind === "other"
        ? null
        : f.kind === "time"
          ? a!.median > b!.median
          : a!.median < b!.median;
    out.push({ name, unit: f.unit, kind: f.kind, before: b, after: a, changePct, flagged, worse });
  }
  return out;
}

function fmtValue(v: number, unit: string): string {
  if (unit === "µs") return Math.abs(v) < 1 ? `${Math.round(v * 1000)} ns` : fmtUs(v);
  const digits = Math.abs(v) >= 100 ? 0 : Math.abs(v) >= 10 ? 1 : 2;
  const n = v.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });
  return unit === ""
    ? n
    : unit === "%" || unit === "×"
      ? `${n}${unit === "×" ? " ×" : " %"}`
      : `${n} ${unit}`;
}

const fmtSide = (s: Side | null, unit: string): [string, string] =>
  s === null ? ["-", "-"] : [fmtValue(s.median, unit), `${fmtValue(s.min, unit)} – ${fmtValue(s.max, unit)}`];

/** The before/after table for people (Markdown, as every benchmark's table). */
export function comparisonTable(rows: Compared[]): string {
  return table(
    ["figure", "before (median)", "before (spread)", "after (median)", "after (spread)", "change", "flag"],
    rows.map((r) => [
      r.name,
      ...fmtSide(r.before, r.unit),
      ...fmtSide(r.after, r.unit),
      Number.isFinite(r.changePct) ? `${r.changePct >= 0 ? "+" : ""}${r.changePct.toFixed(1)} %` : "-",
      r.flagged ? (r.worse === true ? "WORSE" : r.worse === false ? "better" : "changed") : "",
    ]),
  );
}
