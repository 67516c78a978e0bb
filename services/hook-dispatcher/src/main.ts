import { runService } from "@geode/service";
import { serviceTelemetry } from "@geode/telemetry";
import { startHookDispatcher } from "./index.js";

await runService(
  "hook-dispatcher",
  { telemetry: serviceTelemetry },
  ({ bus, observer, names, log, config }) =>
    startHookDispatcher({ nc: bus, observer, names, log, webhooks: { allow: config.webhookAllow } }),
);
