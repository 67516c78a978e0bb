/**
 * A redaction check on user prompts: secrets are already masked by the dispatcher before any
 * handler sees them; this handler refuses a prompt in which something key-like survived, and
 * rewrites e-mail addresses so they never reach the model.
 */
import { type GeodeConnection, HookName, type ServedHook, serveHook } from "@geode/sdk";
import { isMain, runHandlerProcess } from "./run-handler.js";

const KEY_LIKE = /\b(?:sk|pk|rk)-[A-Za-z0-9_-]{16,}/;
const EMAIL = /[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}/g;

export function serveRedactionCheck(conn: GeodeConnection): Promise<ServedHook> {
  return serveHook(conn, HookName.UserPromptSubmit, { name: "redaction-check", priority: 10 }, (envelope) => {
    const input = String(envelope.payload["user_input"] ?? "");
    if (KEY_LIKE.test(input)) return { action: "block", reason: "prompt still contains a key" };
    if (!EMAIL.test(input)) return { action: "continue" };
    return {
      action: "rewrite",
      reason: "e-mail addresses removed",
      updates: { user_input: input.replace(EMAIL, "[email]") },
    };
  });
}

if (isMain(import.meta))
  await runHandlerProcess("redaction-check", async (conn) => [await serveRedactionCheck(conn)]);
