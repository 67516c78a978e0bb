import { runService } from "@geode/bus";
import { startVerifier } from "./index.js";

await runService("verifier", {}, (ctx) => startVerifier({ nc: ctx.nc, names: ctx.names, log: ctx.log }));
