/**
 * A policy guard: blocks shell tools before they run. `failureMode: "closed"` makes it a guard
 * that cannot fail open: if this process dies or times out, shell calls are blocked anyway.
 */
import { type GeodeConnection, HookName, type ServedHook, serveHook } from "@geode/sdk";
import { isMain, runHandlerProcess } from "./run-handler.js";

export function servePolicyGuard(conn: GeodeConnection): Promise<ServedHook> {
  return serveHook(
    conn,
    HookName.PreToolUse,
    { name: "policy-guard", priority: 10, failureMode: "closed", match: { tool_name: ["shell.*"] } },
    (envelope) => ({
      action: "block",
      reason: `${String(envelope.payload["tool_name"])} is not allowed in this workspace`,
    }),
  );
}

if (isMain(import.meta))
  await runHandlerProcess("policy-guard", async (conn) => [await servePolicyGuard(conn)]);
