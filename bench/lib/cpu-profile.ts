/**
 * `pnpm tsx bench/lib/cpu-profile.ts <file.cpuprofile>… [--top N]`: where a `node --cpu-prof`
 * profile spends its time, as tables: self time per function (the flat view of a flame graph) and
 * per package or area (node_modules package, workspace package, node internals, GC, idle).
 * `--from NAME` leaves out what comes before the first sample with function NAME on its stack.
 * Profiles come from `BENCH_CPU_PROF=DIR pnpm bench <name>`: every Node process it starts
 * (services, handlers, the bench itself) writes one there.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { table } from "./stats.js";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** The area a frame belongs to: a package name, a workspace package, node, or a V8 pseudo-frame. */
export function areaOf(url: string, fn: string): string {
  if (url === "") return fn.startsWith("(") ? fn : "(native)";
  const nm = url.lastIndexOf("node_modules/");
  if (nm >= 0) {
    const rest = url.slice(nm + "node_modules/".length).split("/");
    return rest[0]!.startsWith("@") ? `${rest[0]}/${rest[1]}` : rest[0]!;
  }
  if (url.startsWith("node:")) return "node internals";
  const ws = url.match(/\/(packages|services|bench)\/([^/]+)\//);
  if (ws) return `${ws[1]}/${ws[2]}`;
  return path.basename(url);
}

const keyOf = (n: ProfileNode) => {
  const { functionName, url, lineNumber } = n.callFrame;
  return `${functionName || "(anonymous)"} · ${areaOf(url, functionName)}${url ? `:${lineNumber + 1}` : ""}`;
};

/**
 * Self time per function and per area, and total time (self and callees: the width of a flame
 * graph's bar) per function. `from`: only the samples from the first one whose stack holds a
 * function of that name, to leave a process's start (tsx compiling, connecting) out.
 */
export function summarizeProfile(file: string, top: number, from?: string): string {
  const p = JSON.parse(readFileSync(file, "utf8")) as Profile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const stackOf = (id: number) => {
    const out: ProfileNode[] = [];
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) out.push(byId.get(at)!);
    return out;
  };
  let first = 0;
  if (from) {
    first = p.samples.findIndex((id) => stackOf(id).some((n) => n.callFrame.functionName === from));
    if (first < 0) throw new Error(`no sample has ${from} on its stack`);
  }
  const selfUs = new Map<number, number>();
  const totalUs = new Map<string, number>();
  let total = 0;
  for (let i = first; i < p.samples.length; i++) {
    const id = p.samples[i]!;
    const dt = p.timeDeltas[i] ?? 0;
    total += dt;
    selfUs.set(id, (selfUs.get(id) ?? 0) + dt);
    for (const k of new Set(stackOf(id).map(keyOf))) totalUs.set(k, (totalUs.get(k) ?? 0) + dt);
  }
  const fns = new Map<string, number>();
  const areas = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const n = byId.get(id)!;
    const area = areaOf(n.callFrame.url, n.callFrame.functionName);
    fns.set(keyOf(n), (fns.get(keyOf(n)) ?? 0) + us);
    areas.set(area, (areas.get(area) ?? 0) + us);
  }
  const pct = (us: number) => `${((us / total) * 100).toFixed(1)}%`;
  const ms = (us: number) => `${(us / 1000).toFixed(0)} ms`;
  const sorted = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]).slice(0, top);
  const inclusive = [...totalUs].filter(([k]) => !k.startsWith("("));
  return [
    `### ${path.basename(file)}: ${ms(total)} profiled${from ? ` from the first ${from}` : ""}, ${pct(total - (areas.get("(idle)") ?? 0))} busy`,
    "",
    table(
      ["area (self time)", "ms", "share"],
      sorted(areas).map(([k, v]) => [k, ms(v), pct(v)]),
    ),
    "",
    table(
      ["function (self time)", "ms", "share"],
      sorted(fns).map(([k, v]) => [k, ms(v), pct(v)]),
    ),
    "",
    table(
      ["function (total time: self and callees)", "ms", "share"],
      sorted(new Map(inclusive)).map(([k, v]) => [k, ms(v), pct(v)]),
    ),
    "",
  ].join("\n");
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const args = process.argv.slice(2);
  const option = (name: string) => {
    const i = args.indexOf(name);
    if (i < 0) return undefined;
    const v = args[i + 1];
    args.splice(i, 2);
    return v;
  };
  const top = Number(option("--top") ?? 15);
  const from = option("--from");
  for (const f of args) process.stdout.write(`${summarizeProfile(f, top, from)}\n`);
}
