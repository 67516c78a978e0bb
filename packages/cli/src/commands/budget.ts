import { parseArgs } from "node:util";
import { connectBus, type GeodeConnection } from "@geode/bus";
import {
  type BudgetRecord,
  BudgetRecordSchema,
  budgetSpendKey,
  names as buildNames,
  parseBudgetKey,
  windowStart,
} from "@geode/contracts";
import { loadConfig } from "@geode/service";
import { BudgetSpendStore, BudgetStore } from "@geode/state";
import { type CommandIO, type CommandModule, UsageError } from "../command.js";
import { operatorName } from "../operator-name.js";
import { renderTable } from "../render-table.js";

async function withPlane<T>(io: CommandIO, body: (conn: GeodeConnection) => Promise<T>): Promise<T> {
  const config = loadConfig(io.env);
  const nc = await connectBus(config, "geode-budget");
  try {
    return await body({ nc, names: buildNames(config.namespace) });
  } finally {
    await nc.close();
  }
}

function budgetKey(value: string | undefined): string {
  if (value === undefined)
    throw new UsageError("give a budget as SCOPE.NAME (agent.laptop, group.devs, session.ID)");
  const parsed = parseBudgetKey(value);
  if ("error" in parsed) throw new UsageError(parsed.error);
  return value;
}

function num(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (value.trim() === "" || !Number.isFinite(n))
    throw new UsageError(`--${flag} takes a number, got ${JSON.stringify(value)}`);
  return n;
}

/**
 * `geode budget set SCOPE.NAME [--usd X] [--tokens N] [--window W] [--soft P] [--rpm N]`: writes
 * the budget to KV `{ns}_budgets` (replacing one of the same key); the gateway applies it to the
 * next call.
 */
export const budgetSetCommand: CommandModule = {
  async run(args, io) {
    const { positionals, values } = parseArgs({
      args,
      allowPositionals: true,
      options: {
        usd: { type: "string" },
        tokens: { type: "string" },
        window: { type: "string" },
        soft: { type: "string" },
        rpm: { type: "string" },
      },
    });
    if (positionals.length !== 1) throw new UsageError("give one budget, SCOPE.NAME");
    const key = budgetKey(positionals[0]);
    const candidate = {
      ...(values.usd === undefined ? {} : { limit_usd: num(values.usd, "usd") }),
      ...(values.tokens === undefined ? {} : { limit_tokens: num(values.tokens, "tokens") }),
      window: values.window ?? (key.startsWith("session.") ? "session" : "1d"),
      ...(values.soft === undefined ? {} : { soft_percent: num(values.soft, "soft") }),
      ...(values.rpm === undefined ? {} : { requests_per_minute: num(values.rpm, "rpm") }),
      updated_at: Date.now(),
      updated_by: operatorName(io),
    };
    const parsed = BudgetRecordSchema.safeParse(candidate);
    if (!parsed.success)
      throw new UsageError(
        `the budget is refused, nothing written:\n${parsed.error.issues
          .map((i) => `  ${i.path.map(String).join(".") || "budget"}: ${i.message}`)
          .join("\n")}`,
      );
    await withPlane(io, async (conn) => (await BudgetStore.open(conn)).put(key, parsed.data));
    io.out(`budget ${key} set: ${describe(parsed.data)}\n`);
    return 0;
  },
};

function describe(b: BudgetRecord): string {
  const limits = [
    b.limit_usd === undefined ? null : `$${b.limit_usd}`,
    b.limit_tokens === undefined ? null : `${b.limit_tokens} tokens`,
  ].filter((x) => x !== null);
  return [
    limits.length > 0 ? `${limits.join(" and ")} per ${b.window === "session" ? "session" : b.window}` : null,
    limits.length > 0 ? `warning at ${b.soft_percent}%` : null,
    b.requests_per_minute === undefined ? null : `${b.requests_per_minute} requests per minute`,
  ]
    .filter((x) => x !== null)
    .join(", ");
}

/** `geode budget ls [--json]`: every budget with what its current window has used. */
export const budgetLsCommand: CommandModule = {
  async run(args, io) {
    const { values } = parseArgs({ args, options: { json: { type: "boolean", default: false } } });
    const now = Date.now();
    const rows = await withPlane(io, async (conn) => {
      const [budgets, spend] = await Promise.all([BudgetStore.open(conn), BudgetSpendStore.open(conn)]);
      const list = await budgets.list((key) => io.err(`skipping malformed budget ${key}\n`));
      return Promise.all(
        list.map(async ({ key, budget }) => {
          // A session budget's use is the session's; the other windows' use is the current window's.
          const start = windowStart(budget.window, now);
          const used = await spend.get(budgetSpendKey(key, budget.window, start), start);
          return {
            key,
            ...budget,
            used: { usd: used.usd, tokens: used.tokens, calls: used.calls },
            window_start: start,
          };
        }),
      );
    });
    if (values.json) {
      io.out(`${JSON.stringify(rows)}\n`);
      return 0;
    }
    if (rows.length === 0) {
      io.out("no budgets (set one with 'geode budget set agent.NAME --usd X')\n");
      return 0;
    }
    const pct = (used: number, limit: number | undefined) =>
      limit === undefined ? "" : ` (${Math.round((used / limit) * 100)}%)`;
    io.out(
      renderTable(
        ["budget", "window", "usd", "tokens", "rpm", "used usd", "used tokens", "calls"],
        rows.map((r) => [
          r.key,
          r.window,
          r.limit_usd === undefined ? "-" : String(r.limit_usd),
          r.limit_tokens === undefined ? "-" : String(r.limit_tokens),
          r.requests_per_minute === undefined ? "-" : String(r.requests_per_minute),
          `${r.used.usd.toFixed(6)}${pct(r.used.usd, r.limit_usd)}`,
          `${r.used.tokens}${pct(r.used.tokens, r.limit_tokens)}`,
          String(r.used.calls),
        ]),
      ),
    );
    return 0;
  },
};

/** `geode budget rm SCOPE.NAME`. */
export const budgetRmCommand: CommandModule = {
  async run(args, io) {
    const { positionals } = parseArgs({ args, allowPositionals: true, options: {} });
    if (positionals.length !== 1) throw new UsageError("give one budget, SCOPE.NAME");
    const key = budgetKey(positionals[0]);
    const removed = await withPlane(io, async (conn) => (await BudgetStore.open(conn)).remove(key));
    if (!removed) {
      io.err(`no budget ${key} (see 'geode budget ls')\n`);
      return 1;
    }
    io.out(`removed budget ${key}\n`);
    return 0;
  },
};
