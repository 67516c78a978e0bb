import { parseArgs } from "node:util";
import type { Command } from "../command.js";
import { renderSummary } from "../demo/render-summary.js";
import { runDemo } from "../demo/run-demo.js";

export const demoCommand: Command = {
  path: ["demo"],
  summary: "run a scripted agent session through every hook and join point, then show the audit",
  usage: "geode demo [--namespace NS] [--keep] [--quiet]",
  async run(args, io) {
    const { values } = parseArgs({
      args,
      options: {
        namespace: { type: "string" },
        keep: { type: "boolean", default: false },
        quiet: { type: "boolean", default: false },
      },
    });
    const result = await runDemo({
      ...(values.namespace ? { namespace: values.namespace } : {}),
      env: io.env,
      keep: values.keep,
      progress: values.quiet ? () => undefined : (line) => io.err(`  ${line}\n`),
    });
    io.out(renderSummary(result));
    const allRan = result.surfaces.every((s) => s.calls > 0);
    return allRan && result.postgresRows === result.jsonlRows && result.writeExecutions === 1 ? 0 : 1;
  },
};
