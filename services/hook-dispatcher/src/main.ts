import { runService } from "@geode/bus";
import { startHookDispatcher } from "./index.js";

await runService("hook-dispatcher", {}, (ctx) => startHookDispatcher(ctx));
