import path from "node:path";
import { parseArgs } from "node:util";
import { connectBus } from "@geode/bus";
import { NAMESPACE_PATTERN } from "@geode/contracts";
import { type ProjectionDb, projectionNamespaces } from "@geode/projection";
import { type GeodeConfig, loadConfig } from "@geode/service";
import { type CommandIO, type CommandModule, describeFailure, UsageError } from "../command.js";
import { mergeNamespaces, natsNamespaces, openInventoryDb } from "../namespaces/namespace-inventory.js";
import { liveServices, type NamespaceRemoval, removeNamespace } from "../namespaces/remove-namespace.js";
import { renderTable } from "../render-table.js";

function humanBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(1)} ${units[i]}`;
}

/** The projection database, or undefined with one line on stderr when it cannot be opened. */
async function tryInventoryDb(
  config: GeodeConfig,
  io: CommandIO,
  command: string,
): Promise<ProjectionDb | undefined> {
  try {
    return await openInventoryDb(config, command, io.env);
  } catch (err) {
    io.err(`${command}: Postgres left out: ${describeFailure(err)}\n`);
    return undefined;
  }
}

/** `geode ns ls`: every namespace found in NATS and in the projection database (docs/operations.md, "Namespaces"). */
export const nsLsCommand: CommandModule = {
  async run(args, io) {
    const { values } = parseArgs({ args, options: { json: { type: "boolean", default: false } } });
    const config = loadConfig(io.env);
    const nc = await connectBus(config, "geode-ns");
    const db = await tryInventoryDb(config, io, "geode ns ls");
    try {
      const rows = mergeNamespaces(
        await natsNamespaces(nc),
        db ? await projectionNamespaces(db.root) : new Map(),
      );
      if (values.json) {
        io.out(`${JSON.stringify(rows)}\n`);
        return 0;
      }
      io.out(
        renderTable(
          ["namespace", "streams", "buckets", "replicas", "messages", "bytes", "postgres rows"],
          rows.map((r) => [
            r.ns,
            String(r.streams.length),
            String(r.buckets.length),
            r.replicas.length === 0 ? "-" : r.replicas.join(","),
            String(r.messages),
            humanBytes(r.bytes),
            r.activityRows === undefined ? "-" : String(r.activityRows),
          ]),
        ),
      );
      return 0;
    } finally {
      await db?.close();
      await nc.close();
    }
  },
};

/** What a removal touches, one line each. */
function describeRemoval(r: NamespaceRemoval): string {
  const lines = [
    ...r.streams.map((s) => `  stream    ${s}`),
    ...r.buckets.map((b) => `  bucket    ${b}`),
    ...(r.schema ? [`  postgres  schema ${r.ns}`] : []),
    ...r.runDirs.map((d) => `  run files ${path.relative(process.cwd(), d) || d}`),
  ];
  return lines.length > 0 ? `${lines.join("\n")}\n` : "";
}

/** `geode ns rm NS --yes`: deletes a namespace's streams, buckets, Postgres schema and run files. */
export const nsRmCommand: CommandModule = {
  async run(args, io) {
    const { values, positionals } = parseArgs({
      args,
      allowPositionals: true,
      options: { yes: { type: "boolean", default: false }, force: { type: "boolean", default: false } },
    });
    const ns = positionals[0];
    if (ns === undefined || positionals.length > 1) throw new UsageError("name one namespace");
    if (!NAMESPACE_PATTERN.test(ns)) throw new UsageError(`not a namespace: ${ns} ([a-z][a-z0-9_]{0,31})`);
    const config = loadConfig(io.env);
    const nc = await connectBus(config, "geode-ns");
    const db = await tryInventoryDb(config, io, "geode ns rm");
    try {
      const runsDir = path.resolve(config.runsDir);
      const plan = await removeNamespace({ nc, ns, db, runsDir, dryRun: true });
      const what = describeRemoval(plan);
      if (what === "") {
        io.err(`geode ns rm: nothing of namespace ${ns} found\n`);
        return 1;
      }
      if (!values.yes) {
        io.err(`geode ns rm: this deletes, for good:\n${what}Run again with --yes to delete them.\n`);
        return 2;
      }
      const live = values.force ? [] : await liveServices(nc, ns);
      if (live.length > 0) {
        io.err(
          `geode ns rm: namespace ${ns} is in use (${live.join(", ")} answer health); stop them first, or --force\n`,
        );
        return 1;
      }
      await removeNamespace({ nc, ns, db, runsDir });
      io.out(`removed namespace ${ns}:\n${what}`);
      return 0;
    } finally {
      await db?.close();
      await nc.close();
    }
  },
};
