import { runService } from "@geode/bus";
import { startToolExecutor } from "./index.js";

await runService("tool-executor", (ctx) =>
  startToolExecutor({ nc: ctx.nc, names: ctx.names, log: ctx.log, config: { service: ctx.config } }),
);
