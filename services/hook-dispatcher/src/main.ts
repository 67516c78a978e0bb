import { runService } from "@geode/service";
import { serviceTelemetry } from "@geode/telemetry";
import { startHookDispatcher } from "./index.js";

await runService("hook-dispatcher", { telemetry: serviceTelemetry }, ({ nc, names, log, config }) =>
  startHookDispatcher({ nc, names, log, webhooks: { allow: config.webhookAllow } }),
);
