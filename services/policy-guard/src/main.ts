import { runService } from "@geode/service";
import { serviceTelemetry } from "@geode/telemetry";
import { startPolicyGuard } from "./index.js";

await runService("policy-guard", { telemetry: serviceTelemetry }, (ctx) =>
  startPolicyGuard({ nc: ctx.bus, observer: ctx.observer, names: ctx.names, log: ctx.log }),
);
