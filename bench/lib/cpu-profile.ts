/**
 * `pnpm tsx bench/lib/cpu-profile.ts <file.cpuprofile>… [--top N]`: where a `node --cpu-prof`
 * profile spends its time, as tables: self time per function (the flat view of a flame graph) and
 * per package or area (node_modules package, workspace package, node internals, GC, idle).
 * Profiles come from running a benchmark with `NODE_OPTIONS="--cpu-prof --cpu-prof-dir=DIR"`:
 * every Node process it starts (services, handlers, the bench itself) writes one.
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

export function summarizeProfile(file: string, top: number): string {
  const p = JSON.parse(readFileSync(file, "utf8")) as Profile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<number, number>();
  for (let i = 0; i < p.samples.length; i++) {
    const id = p.samples[i]!;
    selfUs.set(id, (selfUs.get(id) ?? 0) + (p.timeDeltas[i] ?? 0));
  }
  const total = p.endTime - p.startTime;
  const fns = new Map<string, number>();
  const areas = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const n = byId.get(id)!;
    const { functionName, url, lineNumber } = n.callFrame;
    const area = areaOf(url, functionName);
    const key = `${functionName || "(anonymous)"} · ${area}${url ? `:${lineNumber + 1}` : ""}`;
    fns.set(key, (fns.get(key) ?? 0) + us);
    areas.set(area, (areas.get(area) ?? 0) + us);
  }
  const pct = (us: number) => `${((us / total) * 100).toFixed(1)}%`;
  const ms = (us: number) => `${(us / 1000).toFixed(0)} ms`;
  const sorted = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]).slice(0, top);
  return [
    `### ${path.basename(file)}: ${ms(total)} profiled, ${pct(total - (areas.get("(idle)") ?? 0))} busy`,
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
  ].join("\n");
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const args = process.argv.slice(2);
  const t = args.indexOf("--top");
  const top = t >= 0 ? Number(args[t + 1]) : 15;
  const files = args.filter((a, i) => a !== "--top" && i !== t + 1);
  for (const f of files) process.stdout.write(`${summarizeProfile(f, top)}\n`);
}
