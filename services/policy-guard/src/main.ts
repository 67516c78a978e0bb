import { runService } from "@geode/bus";
import { startPolicyGuard } from "./index.js";

await runService("policy-guard", {}, (ctx) =>
  startPolicyGuard({ nc: ctx.nc, names: ctx.names, log: ctx.log }),
);
