/**
 * An audit-style observer on all 13 public hooks, one handler per hook, each returning only that
 * hook's own decisions: tool writes ask for permission, permission goes to a human, reads get
 * context, everything else continues.
 */
import {
  type GeodeConnection,
  type HookDecision,
  type HookEnvelope,
  type HookName,
  type ServedHook,
  serveHook,
} from "@geode/sdk";
import { isMain, runHandlerProcess } from "./run-handler.js";

const decide: Record<HookName, (e: HookEnvelope) => HookDecision | null> = {
  UserPromptSubmit: () => null,
  PreToolUse: (e) =>
    e.payload["tool_name"] === "fs.write"
      ? { action: "request_permission", reason: "writes need a person's approval" }
      : { action: "continue" },
  PermissionRequest: () => ({ action: "ask", reason: "a person decides" }),
  PostToolUse: (e) =>
    e.payload["tool_name"] === "fs.read" && e.payload["has_error"] === false
      ? { action: "add_context", reason: "the file came from the sandboxed workspace" }
      : { action: "continue" },
  PreCompact: () => ({ action: "continue" }),
  PostCompact: () => ({ action: "continue" }),
  SessionStart: () => ({ action: "continue" }),
  SessionEnd: () => ({ action: "continue" }),
  SubagentStart: () => ({ action: "continue" }),
  SubagentStop: () => ({ action: "continue" }),
  PreVerify: () => ({ action: "continue" }),
  PostVerify: () => null,
  Stop: () => ({ action: "finalize" }),
};

export function serveObserver(conn: GeodeConnection): Promise<ServedHook[]> {
  return Promise.all(
    (Object.keys(decide) as HookName[]).map((hook) =>
      serveHook(conn, hook, { name: "observer", priority: 100 }, decide[hook]),
    ),
  );
}

if (isMain(import.meta)) await runHandlerProcess("observer", serveObserver);
