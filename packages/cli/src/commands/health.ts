import { parseArgs } from "node:util";
import { connectBus } from "@geode/bus";
import { names as buildNames, SERVICE_NAMES } from "@geode/contracts";
import { loadConfig } from "@geode/service";
import { type CommandModule, intOption } from "../command.js";
import { renderTable } from "../render-table.js";
import { probeHealth } from "../up/health-probe.js";

/**
 * `geode health [service...]`: asks each service on `{ns}.health.{service}`; exit 0 only when every
 * one answered `ok` (a note, such as the recorder's quarantined messages, is shown in the detail
 * column and does not fail it: a restart would not clear it). Small enough to be a container
 * health check.
 */
export const healthCommand: CommandModule = {
  async run(args, io) {
    const { values, positionals } = parseArgs({
      args,
      allowPositionals: true,
      options: { timeout: { type: "string", default: "2000" }, json: { type: "boolean", default: false } },
    });
    const timeoutMs = intOption(values.timeout, "timeout") ?? 2_000; // ms
    const services = positionals.length > 0 ? positionals : [...SERVICE_NAMES];
    const config = loadConfig(io.env);
    const n = buildNames(config.namespace);
    // A NATS that cannot be reached: one line and a hint, from the CLI (see runCli).
    const nc = await connectBus(config, "geode-health");
    try {
      const probes = await Promise.all(services.map((s) => probeHealth(nc, n, s, timeoutMs)));
      if (values.json) io.out(`${JSON.stringify(probes)}\n`);
      else
        io.out(
          renderTable(
            ["service", "status", "version", "metrics", "detail"],
            probes.map((p) => [
              p.service,
              p.status,
              p.version ?? "",
              p.status === "down" ? "" : (p.metrics_url ?? "off"),
              p.reason ?? p.note ?? p.error ?? "",
            ]),
          ),
        );
      return probes.every((p) => p.status === "ok") ? 0 : 1;
    } finally {
      await nc.close();
    }
  },
};
