import { parseArgs } from "node:util";
import type { CommandModule } from "../command.js";
import { renderSummary } from "../demo/render-summary.js";
import { demoPassed, runDemo } from "../demo/run-demo.js";

export const demoCommand: CommandModule = {
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
    return demoPassed(result) ? 0 : 1;
  },
};
