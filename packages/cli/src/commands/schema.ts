import { parseArgs } from "node:util";
import { HOOK_NAMES, isHookName, publicHookSchema, type SchemaVersionLabel } from "@geode/contracts";
import { type CommandModule, UsageError } from "../command.js";

export const schemaCommand: CommandModule = {
  async run(args, io) {
    const { values, positionals } = parseArgs({
      args,
      allowPositionals: true,
      options: { version: { type: "string", default: "v2" }, all: { type: "boolean", default: false } },
    });
    const version = values.version;
    if (version !== "v1" && version !== "v2")
      throw new UsageError(`--version must be v1 or v2, got ${version}`);
    if (values.all) {
      if (positionals.length > 0) throw new UsageError("--all takes no hook name");
      const all = Object.fromEntries(
        HOOK_NAMES.map((h) => [h, publicHookSchema(h, { version: version as SchemaVersionLabel })]),
      );
      io.out(`${JSON.stringify(all, null, 2)}\n`);
      return 0;
    }
    const [name, ...rest] = positionals;
    if (name === undefined || rest.length > 0) throw new UsageError("give exactly one hook name, or --all");
    if (!isHookName(name)) {
      io.err(`unknown hook: ${name}\nknown hooks: ${HOOK_NAMES.join(", ")}\n`);
      return 2;
    }
    io.out(
      `${JSON.stringify(publicHookSchema(name, { version: version as SchemaVersionLabel }), null, 2)}\n`,
    );
    return 0;
  },
};
