/**
 * opencode's plugin path: one `tool.execute.before` of `@geode/opencode-plugin` as opencode calls
 * it (in its process: a `fetch` to the gateway, the plane, one PreToolUse handler and back) against
 * a plugin hook that does nothing, interleaved. opencode runs plugins in its own Bun runtime; this
 * measures the same code on Node's `fetch` (keep-alive connections, as both keep).
 */
import { randomUUID } from "node:crypto";
import { OPENCODE_HOOK_PATH } from "@geode/contracts";
import { GeodeOpencodePlugin } from "@geode/opencode-plugin";
import { fmtUs, type LatencySummary, measureInterleaved, progress, summarize, table } from "../lib/stats.js";

const PLUGIN_PATH_TARGET_MS = 3;

/** Measures the plugin's tool.execute.before against a do-nothing hook; the lines to print and whether the target was met. */
export async function measurePluginPath(
  gatewayBase: string,
  token: string,
  rounds: number,
): Promise<{ text: string; met: boolean }> {
  process.env["GEODE_AGENT_TOKEN"] = token;
  const hooks = await GeodeOpencodePlugin({}, { url: `${gatewayBase}${OPENCODE_HOOK_PATH}` });
  const before = hooks["tool.execute.before"];
  const sessionID = `ses_${randomUUID().replaceAll("-", "")}`;
  let n = 0;
  const call = () => ({
    input: { tool: "bash", sessionID, callID: `call_bench_${n++}` },
    output: { args: { command: "npm test -- --runInBand src/parser", description: "Run the parser tests" } },
  });
  const nothing = async (_input: unknown, _output: unknown) => undefined;
  const fns = [
    () => {
      const c = call();
      return nothing(c.input, c.output);
    },
    () => {
      const c = call();
      return before(c.input, c.output);
    },
  ];
  progress("plugin path warm-up");
  for (const fn of fns) for (let i = 0; i < 200; i++) await fn();
  progress(`plugin path: ${rounds} rounds of 20 calls per case`);
  const [floor, plugin] = (await measureInterleaved(fns, rounds, 20)).map(summarize) as [
    LatencySummary,
    LatencySummary,
  ];
  const added = (plugin.medianUs - floor.medianUs) / 1000;
  const met = added <= PLUGIN_PATH_TARGET_MS;
  const rows = [
    ["opencode plugin hook doing nothing", fmtUs(floor.medianUs), fmtUs(floor.p99Us), ""],
    [
      "opencode: @geode/opencode-plugin tool.execute.before, 1 handler",
      fmtUs(plugin.medianUs),
      fmtUs(plugin.p99Us),
      `+${added.toFixed(2)} ms`,
    ],
  ];
  const verdict = `plugin path, added per tool call at the median (target ≤ ${PLUGIN_PATH_TARGET_MS} ms): ${met ? "met" : "not met"}`;
  return { text: `${table(["plugin hook", "median", "p99", "added"], rows)}\n${verdict}\n`, met };
}
