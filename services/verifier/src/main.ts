import { runService } from "@geode/service";
import { serviceTelemetry } from "@geode/telemetry";
import { startVerifier } from "./index.js";

await runService("verifier", { telemetry: serviceTelemetry }, (ctx) =>
  startVerifier({ nc: ctx.bus, observer: ctx.observer, names: ctx.names, log: ctx.log }),
);
