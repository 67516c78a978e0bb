import { spawnSync } from "node:child_process";
import { REPO_ROOT } from "@geode/testing";
import { describe, expect, it } from "vitest";
import { compareTurns, comparisonTable, type Figure, parseFigures } from "../bench/lib/compare.js";

const OUTPUT = `
## bench/x

| case       | calls | median  | p99      | ×raw | 64 callers |
| ---------- | ----- | ------- | -------- | ---- | ---------- |
| raw        | 1000  | 120.5 µs | 1.20 ms | 1.00 | 9,614/s    |
| 1 handler  | 1000  | 1.39 ms | 802 ns   | -    | 4,500/s    |

| payload | median  | p99     | copy median | p99   |
| ------- | ------- | ------- | ----------- | ----- |
| small   | 7.0 µs  | 15.2 µs | 3.9 µs      | 7.8 µs |

target: 1 handler median / 2 raw round trips: 3.78 (target ≤ 1.20): not met
CPU per call, 1 handler: dispatcher / audited forwarder 2.15 × (target ≤ 1.30 ×): not met
CPU per event, the recorder process, backlog: 23.9 µs (target ≤ 15 µs): not met
target: 1 KiB median < 20 µs: met (7.0 µs)
a note with no figure in it
`;

const byName = (figures: Figure[]) => new Map(figures.map((f) => [f.name, f]));

describe("bench --compare: reading a benchmark's figures", () => {
  it("reads every numeric cell of its tables, times in µs whatever unit was printed", () => {
    const f = byName(parseFigures(OUTPUT));
    expect(f.get("raw · median")).toMatchObject({ value: 120.5, unit: "µs", kind: "time" });
    expect(f.get("raw · p99")).toMatchObject({ value: 1200, unit: "µs", kind: "time" });
    expect(f.get("1 handler · p99")!.value).toBeCloseTo(0.802, 6);
    expect(f.get("1 handler · 64 callers")).toMatchObject({ value: 4500, unit: "/s", kind: "rate" });
    expect(f.get("raw · ×raw")).toMatchObject({ value: 1, unit: "", kind: "other" });
    expect(f.get("raw · calls")!.value).toBe(1000);
    // A dash is no figure; a heading that repeats is told apart by the column before it.
    expect(f.has("1 handler · ×raw")).toBe(false);
    expect(f.get("small · p99")!.value).toBe(15.2);
    expect(f.get("small · p99 (copy median)")!.value).toBe(7.8);
    // The header and separator rows are not read as figures.
    expect([...f.keys()].some((k) => k.startsWith("case") || k.startsWith("---"))).toBe(false);
  });

  it("reads the first figure of a line of text, named by what comes before it", () => {
    const f = byName(parseFigures(OUTPUT));
    expect(f.get("target: 1 handler median / 2 raw round trips")).toMatchObject({ value: 3.78, unit: "" });
    expect(f.get("CPU per call, 1 handler: dispatcher / audited forwarder")).toMatchObject({
      value: 2.15,
      unit: "×",
    });
    expect(f.get("CPU per event, the recorder process, backlog")).toMatchObject({
      value: 23.9,
      kind: "time",
    });
    expect([...f.keys()].some((k) => k.includes("1 KiB median") || k.includes("a note"))).toBe(false);
    expect(parseFigures(OUTPUT)).toHaveLength(16);
  });

  it("names a figure printed twice apart", () => {
    const names = parseFigures("took: 1.0 ms\ntook: 2.0 ms\n").map((f) => f.name);
    expect(names).toEqual(["took", "took #2"]);
  });
});

const fig = (name: string, value: number, unit = "µs"): Figure => ({
  name,
  value,
  unit,
  kind: unit === "µs" ? "time" : unit.endsWith("/s") ? "rate" : "other",
});
const turns = (values: number[], name = "median", unit = "µs") => values.map((v) => [fig(name, v, unit)]);

describe("bench --compare: before against after", () => {
  it("gives each side's median and spread and the change of the medians", () => {
    const [r] = compareTurns(turns([100, 110, 90]), turns([105, 95, 101]));
    expect(r!.before).toEqual({ median: 100, min: 90, max: 110, n: 3 });
    expect(r!.after).toEqual({ median: 101, min: 95, max: 105, n: 3 });
    expect(r!.changePct).toBeCloseTo(1, 6);
    expect(r!.flagged).toBe(false);
    expect(r!.worse).toBeNull();
  });

  it("flags a change larger than either side's spread, a slower time as worse", () => {
    const [slower] = compareTurns(turns([100, 102, 98]), turns([130, 131, 129]));
    expect(slower).toMatchObject({ flagged: true, worse: true });
    const [faster] = compareTurns(turns([100, 102, 98]), turns([70, 71, 69]));
    expect(faster).toMatchObject({ flagged: true, worse: false });
    // A change of 10 inside a spread of 20 on one side is not flagged.
    const [inside] = compareTurns(turns([100, 101, 99]), turns([110, 120, 100]));
    expect(inside!.flagged).toBe(false);
    // One turn a side measures no spread: nothing to flag against.
    const [once] = compareTurns(turns([100]), turns([200]));
    expect(once).toMatchObject({ flagged: false, changePct: 100 });
  });

  it("takes a lower rate as worse, and a changed figure of no known sense as only changed", () => {
    const [rate] = compareTurns(
      turns([9000, 9100], "64 callers", "/s"),
      turns([4000, 4100], "64 callers", "/s"),
    );
    expect(rate).toMatchObject({ flagged: true, worse: true });
    const [ratio] = compareTurns(turns([1.2, 1.21], "r", "×"), turns([1.5, 1.51], "r", "×"));
    expect(ratio).toMatchObject({ flagged: true, worse: null });
  });

  it("leaves out the settings (the same value in every turn) and keeps a figure only one side has", () => {
    const before = [[fig("calls", 1000, ""), fig("old", 5)]];
    const after = [[fig("calls", 1000, ""), fig("new", 7)]];
    const rows = compareTurns(before, after);
    expect(rows.map((r) => r.name)).toEqual(["new", "old"]);
    expect(rows[0]).toMatchObject({ before: null, flagged: false });
    expect(Number.isNaN(rows[0]!.changePct)).toBe(true);
  });

  it("draws one row per figure with the change and the flag", () => {
    const text = comparisonTable(compareTurns(turns([100, 102, 98]), turns([1300, 1310, 1290])));
    const lines = text.split("\n");
    expect(lines).toHaveLength(3);
    const cells = lines[2]!.split("|").map((c) => c.trim());
    expect(cells.slice(1, -1)).toEqual([
      "median",
      "100.0 µs",
      "98.0 µs – 102.0 µs",
      "1.30 ms",
      "1.29 ms – 1.31 ms",
      "+1200.0 %",
      "WORSE",
    ]);
  });
});

describe("pnpm bench --compare", () => {
  const bench = (args: string[], env: Record<string, string> = {}) =>
    spawnSync("pnpm", ["--silent", "bench", ...args], {
      cwd: REPO_ROOT,
      encoding: "utf8",
      env: { ...process.env, ...env },
      timeout: 240_000,
    });

  it("runs a benchmark on REF and on the working tree in turns and prints the before/after table", () => {
    // REF as the path of a checkout already built (this one): no worktree to install and build.
    const r = bench(["--compare", REPO_ROOT, "contracts", "--turns", "2"], { BENCH_SCALE: "0.01" });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^## bench\/contracts: before .+, after working tree \(/m);
    const rows = r.stdout
      .split("\n")
      .filter((l) => l.startsWith("|"))
      .map((l) =>
        l
          .split("|")
          .map((c) => c.trim())
          .slice(1, -1),
      );
    expect(rows[0]).toEqual([
      "figure",
      "before (median)",
      "before (spread)",
      "after (median)",
      "after (spread)",
      "change",
      "flag",
    ]);
    const body = rows.slice(2);
    for (const row of body) expect(row).toHaveLength(7);
    const names = body.map((row) => row[0]);
    expect(names).toContain("PreToolUse 1.0 KiB · sanitize+validate median");
    expect(names).toContain("hook invoke request · per call median");
    // The calls column is a setting, the same in every turn: not a figure.
    expect(names.some((n) => n!.endsWith("· calls"))).toBe(false);
    const row = body.find((x) => x[0] === "PreToolUse 1.0 KiB · sanitize+validate median")!;
    expect(row[1]).toMatch(/^[\d.,]+ (ns|µs|ms)$/);
    expect(row[2]).toMatch(/^[\d.,]+ (ns|µs|ms) – [\d.,]+ (ns|µs|ms)$/);
    expect(row[5]).toMatch(/^[+-]\d+\.\d %$/);
    expect(r.stdout).toMatch(/2 turns each, taking turns; .+ figures changed by more than their spread/);
    // Progress while it runs, on stderr.
    expect(r.stderr).toContain("contracts: turn 2 of 2, before");
  }, 300_000);

  it("refuses a REF that names no commit, and a benchmark that does not exist", () => {
    const noRef = bench(["--compare", "no-such-ref-anywhere", "contracts"]);
    expect(noRef.status).toBe(1);
    expect(noRef.stderr).toContain("bench --compare: git rev-parse");
    const noBench = bench(["--compare", "HEAD", "no-such-bench"]);
    expect(noBench.status).toBe(2);
    expect(noBench.stderr).toContain("unknown benchmark: no-such-bench");
  }, 60_000);
});
