/**
 * The overview's charts, drawn by uPlot (bundled with the page: the console works offline). Each
 * chart is a `figure` with a caption and a text summary beside the canvas, so the numbers are
 * there for a screen reader and for a test as well as for the eye.
 */
import type { ConsoleStats } from "@geode/contracts";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { el } from "./dom.js";

const PALETTE = ["#2563eb", "#059669", "#d97706", "#7c3aed", "#db2777", "#0891b2", "#65a30d", "#9333ea"];
const BLOCK = "#dc2626";

/** One line of a chart: its label, one value per bucket, and how it is drawn. */
export interface Line {
  label: string;
  values: Array<number | null>;
  colour?: string;
  dash?: number[];
  /** Marks each value (series with gaps, where a lone value would be no line at all). */
  points?: boolean;
}

/**
 * A line chart over time buckets (`xs`, epoch ms) in a captioned figure, with `summary` as text
 * under it.
 */
export function lineChart(
  title: string,
  id: string,
  xs: number[],
  lines: Line[],
  summary: string,
  /** How the y axis writes a value (default uPlot's own, which rounds fractions of a cent away). */
  format?: (v: number) => string,
): HTMLElement {
  const box = el("div", { class: "chart-canvas" });
  const figure = el(
    "figure",
    { class: "chart", id, "aria-label": title },
    el("figcaption", {}, title),
    box,
    el("p", { class: "chart-summary" }, summary),
  );
  const opts: uPlot.Options = {
    width: 420,
    height: 180,
    legend: { show: true },
    cursor: { drag: { x: false, y: false } },
    scales: { x: { time: true } },
    series: [
      {},
      ...lines.map((l, i) => ({
        label: l.label,
        stroke: l.colour ?? PALETTE[i % PALETTE.length],
        width: 2,
        points: { show: l.points ?? false, size: 5 },
        ...(l.dash ? { dash: l.dash } : {}),
        spanGaps: false,
      })),
    ],
    axes: [{}, format ? { size: 80, values: (_u, splits) => splits.map(format) } : { size: 50 }],
  };
  // uPlot measures the box: draw once the figure is in the document.
  requestAnimationFrame(() => {
    opts.width = Math.max(300, Math.min(560, box.clientWidth || 420));
    new uPlot(opts, [xs.map((x) => x / 1000), ...lines.map((l) => l.values)] as uPlot.AlignedData, box);
  });
  return figure;
}

const total = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

/** The blocks of all series, as one red dashed line. */
function blocksLine(series: Array<{ blocks: number[] }>, buckets: number): Line {
  const values = new Array<number>(buckets).fill(0);
  for (const s of series)
    s.blocks.forEach((b, i) => {
      values[i]! += b;
    });
  return { label: "blocks", values, colour: BLOCK, dash: [6, 4] };
}

/** The charts of `GET /api/stats`: calls and blocks by agent and by hook, latency percentiles, recorder lag. */
export function statsCharts(stats: ConsoleStats): HTMLElement {
  const n = stats.buckets.length;
  const calls = (s: { calls: number[] }) => total(s.calls);
  const blocks = (s: { blocks: number[] }) => total(s.blocks);
  const byAgent = lineChart(
    `Hook calls by agent, last ${stats.window}`,
    "chart-agents",
    stats.buckets,
    [...stats.by_agent.map((a) => ({ label: a.agent, values: a.calls })), blocksLine(stats.by_agent, n)],
    stats.by_agent.map((a) => `${a.agent}: ${calls(a)} calls, ${blocks(a)} blocked`).join("; ") ||
      "No hook calls.",
  );
  const byHook = lineChart(
    `Hook calls by hook, last ${stats.window}`,
    "chart-hooks",
    stats.buckets,
    [...stats.by_hook.map((h) => ({ label: h.hook, values: h.calls })), blocksLine(stats.by_hook, n)],
    stats.by_hook.map((h) => `${h.hook}: ${calls(h)} calls, ${blocks(h)} blocked`).join("; ") ||
      "No hook calls.",
  );
  const latency = lineChart(
    "Handler latency (ms): p50, p95, p99",
    "chart-latency",
    stats.buckets,
    [
      { label: "p50", values: stats.latency.p50, points: true },
      { label: "p95", values: stats.latency.p95, points: true },
      { label: "p99", values: stats.latency.p99, colour: BLOCK, points: true },
    ],
    stats.latency_by_hook
      .map((h) => `${h.hook}: p50 ${h.p50} ms, p95 ${h.p95} ms, p99 ${h.p99} ms`)
      .join("; ") || "No hook calls.",
  );
  const lag = el(
    "figure",
    { class: "chart lag", id: "chart-recorder" },
    el("figcaption", {}, "Recorder lag (messages not yet in Postgres)"),
    el(
      "ul",
      {},
      ...stats.recorder.map((s) =>
        el(
          "li",
          {},
          `${s.stream}: `,
          el("strong", {}, s.lag === null ? "recorder not running" : String(s.lag)),
        ),
      ),
    ),
  );
  return el("section", { class: "charts", "aria-label": "activity charts" }, byAgent, byHook, latency, lag);
}
