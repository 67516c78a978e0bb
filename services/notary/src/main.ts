import { runService } from "@geode/service";
import { serviceTelemetry } from "@geode/telemetry";
import { NOTARY_ENV, startNotary } from "./index.js";

await runService(
  "notary",
  { env: NOTARY_ENV, telemetry: serviceTelemetry },
  ({ config, settings, nc, names, log, observer }) =>
    startNotary({ nc, names, log, observer, databaseUrl: config.databaseUrl, ...settings }),
);
