import { parseArgs } from "node:util";
import { RETENTION_DAYS } from "@geode/contracts";
import { pruneExpired } from "@geode/projection";
import { loadConfig } from "@geode/service";
import type { CommandModule } from "../command.js";
import { openExistingProjection } from "../projection-from-env.js";

export const pruneCommand: CommandModule = {
  async run(args, io) {
    parseArgs({ args, options: {} });
    const config = loadConfig(io.env);
    const db = await openExistingProjection(config, "geode prune", io);
    if (!db) return 1;
    try {
      const counts = await pruneExpired(db.db);
      const buckets = Object.entries(RETENTION_DAYS)
        .map(([b, d]) => `${b} ${d} d`)
        .join(", ");
      io.out(`pruned schema ${config.namespace} (retention: ${buckets})\n`);
      for (const [table, n] of Object.entries(counts)) io.out(`  ${table.padEnd(22)} ${n} deleted\n`);
      return 0;
    } finally {
      await db.close();
    }
  },
};
