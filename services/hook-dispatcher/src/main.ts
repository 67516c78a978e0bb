import { runService } from "@geode/bus";
import { startHookDispatcher } from "./index.js";

await runService("hook-dispatcher", {}, ({ nc, names, log, config }) =>
  startHookDispatcher({ nc, names, log, webhooks: { allow: config.webhookAllow } }),
);
