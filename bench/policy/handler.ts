/**
 * The echo handler of `pnpm bench policy`: registered as the policy-guard is (PreToolUse, `policy`,
 * priority 10, failure_mode closed), it answers no decision at once, so the benchmark's other case
 * differs from this one only by the guard's work.
 */
import { connectGeode, HookName, serveHook } from "@geode/sdk";

const conn = await connectGeode({ name: "bench-policy-echo" });
const served = await serveHook(
  conn,
  HookName.PreToolUse,
  { name: "policy", priority: 10, failureMode: "closed" },
  () => null,
);
process.stdout.write("ready\n");
const stop = async () => {
  await served.close();
  await conn.close();
  process.exit(0);
};
process.on("SIGTERM", () => void stop());
process.on("SIGINT", () => void stop());
