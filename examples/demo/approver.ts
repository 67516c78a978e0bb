/**
 * An approver that answers every human-approval request with `allow`, as a person at
 * `geode approvals watch` would. Scripts use it where nobody is at the keyboard.
 */
import { serveApprovals } from "@geode/sdk";
import { runHandlerProcess } from "./run-handler.js";

await runHandlerProcess("auto-approver", async (conn) => [
  serveApprovals(conn, () => ({ decision: "allow", reason: "approved by the demo's auto-approver" }), {
    approver: "auto-approver",
  }),
]);
