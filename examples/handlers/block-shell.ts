/**
 * A PreToolUse guard written with the SDK: blocks `shell` calls that delete things, and tags every
 * other shell call with a reason. Run: `pnpm tsx examples/handlers/block-shell.ts` (NATS_URL and
 * GEODE_NAMESPACE as for the services). Ctrl-C unregisters it.
 */
import { connectGeode, HookName, serveHook } from "@geode/sdk";

const conn = await connectGeode({ name: "example-block-shell" });
const served = await serveHook(
  conn,
  HookName.PreToolUse,
  { name: "block-shell", priority: 10, match: { tool_name: ["shell"] }, failureMode: "closed" },
  (envelope) => {
    const cmd = String((envelope.payload["arguments"] as Record<string, unknown>)["cmd"] ?? "");
    if (/\brm\s+-rf?\b/.test(cmd)) return { action: "block", reason: "deleting files is not allowed here" };
    return null; // no decision: the chain goes on
  },
);
process.stdout.write(`block-shell serving ${conn.names.hookHandler(HookName.PreToolUse, "block-shell")}\n`);
const stop = async () => {
  await served.close();
  await conn.close();
  process.exit(0);
};
process.on("SIGINT", () => void stop());
process.on("SIGTERM", () => void stop());
