/**
 * The demo's dangerous remote tool, `shell.exec`, served by a provider process of its own. It needs
 * an approval, and the policy guard blocks it before it could run: it never executes in the demo.
 */
import { type GeodeConnection, type ServedTool, serveTool } from "@geode/sdk";
import { isMain, runHandlerProcess } from "./run-handler.js";

export function serveShellTool(conn: GeodeConnection): Promise<ServedTool> {
  return serveTool(
    conn,
    {
      name: "shell.exec",
      description: "Runs a shell command (the demo's dangerous tool).",
      input_schema: { type: "object", properties: { command: { type: "string" } }, required: ["command"] },
      effect: "admin",
      requires_approval: true,
    },
    () => ({ result: { ran: true } }),
  );
}

if (isMain(import.meta)) await runHandlerProcess("shell-tool", async (conn) => [await serveShellTool(conn)]);
