import { parseArgs } from "node:util";
import { connectBus, loadConfig } from "@geode/bus";
import { names as buildNames, type HandlerRegistration, isHookName } from "@geode/contracts";
import { HandlerRegistrations } from "@geode/state";
import { type Command, type CommandIO, UsageError } from "../command.js";
import { renderTable } from "../render-table.js";

async function withRegistry<T>(
  io: CommandIO,
  client: string,
  body: (registry: HandlerRegistrations) => Promise<T>,
): Promise<T | number> {
  const config = loadConfig(io.env);
  const n = buildNames(config.namespace);
  // A NATS that cannot be reached: one line and a hint, from the CLI (see runCli).
  const nc = await connectBus(config, client);
  try {
    return await body(await HandlerRegistrations.open({ nc, names: n }));
  } finally {
    await nc.close();
  }
}

/** "12.3s", or "expired 4.0s ago" for a registration past its lease. */
function leaseLeft(reg: HandlerRegistration, now = Date.now()): string {
  const left = reg.heartbeat_at + reg.lease_ms - now;
  const secs = (ms: number) => `${(ms / 1000).toFixed(1)}s`;
  return left >= 0 ? secs(left) : `expired ${secs(-left)} ago`;
}

/** The `handlers ls` table rows, in call order (hook, then priority, then name). */
function handlerRows(regs: HandlerRegistration[], now = Date.now()): string[][] {
  return [...regs]
    .sort((a, b) =>
      a.hook !== b.hook
        ? a.hook < b.hook
          ? -1
          : 1
        : a.priority - b.priority || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0),
    )
    .map((r) => [
      r.hook,
      r.name,
      String(r.priority),
      r.timeout_ms === 0 ? "none" : `${r.timeout_ms}ms`,
      r.schema_version.replace("geode.public-hook.", ""),
      r.failure_mode,
      r.match ? `tool_name: ${r.match.tool_name.join(", ")}` : "*",
      leaseLeft(r, now),
    ]);
}

export const handlersLsCommand: Command = {
  path: ["handlers", "ls"],
  summary:
    "list hook handler registrations (hook, name, priority, timeout, version, failure mode, match, lease)",
  usage: "geode handlers ls [<HookName>] [--json]",
  async run(args, io) {
    const { values, positionals } = parseArgs({
      args,
      allowPositionals: true,
      options: { json: { type: "boolean", default: false } },
    });
    const [hook, ...rest] = positionals;
    if (rest.length > 0) throw new UsageError("give at most one hook name");
    if (hook !== undefined && !isHookName(hook)) throw new UsageError(`unknown hook: ${hook}`);
    return withRegistry(io, "geode-handlers", async (registry) => {
      const regs = await registry.list(hook, (key) => io.err(`skipping malformed registration ${key}\n`));
      if (values.json) {
        io.out(`${JSON.stringify(regs)}\n`);
        return 0;
      }
      if (regs.length === 0) {
        io.out(hook ? `no handlers registered for ${hook}\n` : "no hook handlers registered\n");
        return 0;
      }
      io.out(
        renderTable(
          ["hook", "name", "priority", "timeout", "version", "failure", "match", "lease left"],
          handlerRows(regs),
        ),
      );
      return 0;
    });
  },
};

export const handlersRmCommand: Command = {
  path: ["handlers", "rm"],
  summary: "delete a hook handler registration (e.g. a crashed failure_mode closed guard)",
  usage: "geode handlers rm <HookName> <handler>",
  async run(args, io) {
    const { positionals } = parseArgs({ args, allowPositionals: true, options: {} });
    const [hook, name, ...rest] = positionals;
    if (hook === undefined || name === undefined || rest.length > 0)
      throw new UsageError("give a hook name and a handler name");
    if (!isHookName(hook)) throw new UsageError(`unknown hook: ${hook}`);
    return withRegistry(io, "geode-handlers", async (registry) => {
      const key = `${hook}.${name}`;
      if (!(await registry.remove(hook, name))) {
        io.err(`no registration ${key}\n`);
        return 1;
      }
      io.out(`deleted ${key} (a live replica registers itself again on its next heartbeat)\n`);
      return 0;
    });
  },
};
