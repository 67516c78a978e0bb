/**
 * An approver that answers every human-approval request with `allow`, as a person at
 * `geode approvals watch` would. Scripts use it where nobody is at the keyboard.
 */
import { type GeodeConnection, type ServedApprovals, serveApprovals } from "@geode/sdk";
import { isMain, runHandlerProcess } from "./run-handler.js";

export function serveAutoApprover(conn: GeodeConnection): ServedApprovals {
  return serveApprovals(conn, () => ({ decision: "allow", reason: "approved by the demo's auto-approver" }), {
    approver: "auto-approver",
  });
}

if (isMain(import.meta)) await runHandlerProcess("auto-approver", async (conn) => [serveAutoApprover(conn)]);
