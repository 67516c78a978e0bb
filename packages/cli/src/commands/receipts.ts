import { parseArgs } from "node:util";
import { connectBus, RuntimeEventBus } from "@geode/bus";
import {
  names as buildNames,
  isReceiptRunning,
  type Names,
  type Receipt,
  type ReceiptState,
} from "@geode/contracts";
import { loadConfig } from "@geode/service";
import { ReceiptStore, resolveReceipt } from "@geode/state";
import type { NatsConnection } from "@nats-io/transport-node";
import { type CommandIO, type CommandModule, UsageError } from "../command.js";
import { renderTable } from "../render-table.js";

async function withReceipts(
  io: CommandIO,
  body: (ctx: { receipts: ReceiptStore; nc: NatsConnection; names: Names }) => Promise<number>,
): Promise<number> {
  const config = loadConfig(io.env);
  const n = buildNames(config.namespace);
  // A NATS that cannot be reached: one line and a hint, from the CLI (see runCli).
  const nc = await connectBus(config, "geode-cli receipts");
  try {
    return await body({ receipts: await ReceiptStore.open({ nc, names: n }), nc, names: n });
  } finally {
    await nc.drain();
  }
}

const time = (ms: number | null) => (ms === null ? "-" : new Date(ms).toISOString());

/** An admitted receipt's lease: still running (until when), or lapsed (outcome unknown). */
function leaseOf(r: Receipt, now: number): string {
  if (r.state !== "admitted") return "-";
  return isReceiptRunning(r, now) ? `running until ${time(r.lease_until ?? null)}` : "lapsed";
}

export const receiptsLsCommand: CommandModule = {
  async run(args, io) {
    const { values } = parseArgs({
      args,
      options: { state: { type: "string" }, json: { type: "boolean", default: false } },
    });
    if (values.state !== undefined && !["admitted", "completed", "failed"].includes(values.state))
      throw new UsageError(`--state must be admitted, completed or failed, got ${values.state}`);
    return withReceipts(io, async ({ receipts }) => {
      const rows = await receipts.list(values.state as ReceiptState | undefined);
      if (values.json) {
        io.out(`${JSON.stringify(rows, null, 2)}\n`);
        return 0;
      }
      if (rows.length === 0) {
        io.out("no receipts\n");
        return 0;
      }
      const now = Date.now();
      io.out(
        renderTable(
          ["KEY", "STATE", "LEASE", "TOOL", "STATUS", "ADMITTED", "COMPLETED"],
          rows.map((r) => [
            r.key,
            r.state,
            leaseOf(r, now),
            r.tool_name,
            r.status ?? "-",
            time(r.admitted_at),
            time(r.completed_at),
          ]),
        ),
      );
      return 0;
    });
  },
};

export const receiptsShowCommand: CommandModule = {
  async run(args, io) {
    const { positionals } = parseArgs({ args, allowPositionals: true, options: {} });
    const [key, ...rest] = positionals;
    if (key === undefined || rest.length > 0) throw new UsageError("give exactly one receipt key");
    return withReceipts(io, async ({ receipts }) => {
      const found = await receipts.get(key);
      if (!found) {
        io.err(`no receipt ${key}\n`);
        return 1;
      }
      io.out(`${JSON.stringify({ ...found.receipt, revision: found.revision }, null, 2)}\n`);
      return 0;
    });
  },
};

/**
 * Resolves an admitted (indeterminate) receipt as completed or failed after an operator checked
 * the outside world. Revision-checked, so a concurrent commit is never overwritten; recorded as a
 * `tool_recovery_succeeded` / `tool_recovery_failed` event.
 */
export const receiptsResolveCommand: CommandModule = {
  async run(args, io) {
    const { values, positionals } = parseArgs({
      args,
      allowPositionals: true,
      options: { as: { type: "string" }, reason: { type: "string" }, by: { type: "string" } },
    });
    const [key, ...rest] = positionals;
    if (key === undefined || rest.length > 0) throw new UsageError("give exactly one receipt key");
    const as = values.as;
    if (as !== "completed" && as !== "failed") throw new UsageError("--as must be completed or failed");
    const by = values.by ?? io.env["USER"] ?? "operator";
    const reason = values.reason;
    return withReceipts(io, async ({ receipts, nc, names }) => {
      const events = await RuntimeEventBus.create({ nc, names, source: "geode-cli" });
      const outcome = await resolveReceipt({ receipts, events }, { key, as, by, reason });
      if (!outcome.resolved) {
        io.err(
          outcome.why === "changed"
            ? `receipt ${key} changed while resolving it; look again with 'geode receipts show ${key}'\n`
            : `${outcome.message}\n`,
        );
        return 1;
      }
      io.out(`receipt ${key}: admitted → ${as} (revision ${outcome.revision})\n`);
      return 0;
    });
  },
};
