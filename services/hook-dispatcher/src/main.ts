import { runService } from "@geode/service";
import { serviceTelemetry } from "@geode/telemetry";
import { startHookDispatcher } from "./index.js";

await runService("hook-dispatcher", { telemetry: serviceTelemetry }, ({ bus, names, log, config }) =>
  startHookDispatcher({ nc: bus, names, log, webhooks: { allow: config.webhookAllow } }),
);
