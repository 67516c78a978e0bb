/**
 * A remote tool in its own process: `pnpm tsx examples/tools/remote-tool.ts`. It registers
 * `notes.append` in `{ns}_tools` and serves approved calls; the tool-executor runs policy, hooks,
 * approval and the admission receipt before a call gets here. Ctrl-C unregisters it.
 */
import { connectGeode, serveTool } from "@geode/sdk";

const conn = await connectGeode({ name: "notes-tool" });
const notes: string[] = [];
const tool = await serveTool(
  conn,
  {
    name: "notes.append",
    description: "Appends a line to the session's notes.",
    input_schema: {
      type: "object",
      properties: { text: { type: "string", minLength: 1, maxLength: 500 } },
      required: ["text"],
      additionalProperties: false,
    },
    effect: "mutation",
    requires_approval: false,
  },
  (args) => {
    notes.push(String(args["text"]));
    return { result: { count: notes.length } };
  },
);
process.stdout.write(`serving ${tool.definition.name} on ${conn.names.toolTerminal(tool.definition.name)}\n`);
process.once("SIGINT", () => {
  void tool.close().then(() => conn.close());
});
