import { describe, expect, it } from "vitest";
import { handler } from "./chain-fixture.js";
import { handlerFailed } from "./handler-failed.js";

describe("handlerFailed", () => {
  it("an open handler's error is recorded and audited with its type only; the chain goes on", () => {
    expect(
      handlerFailed("PreToolUse", handler("PreToolUse", "slow"), "Timeout", "timed out after 10 ms"),
    ).toEqual({
      handler: "slow",
      status: "error",
      reason: "Timeout",
      error: { type: "Timeout", message: "timed out after 10 ms" },
      blocks: false,
    });
  });

  it("a closed handler's error stops the chain as block, or deny for PermissionRequest", () => {
    const closed = { failure_mode: "closed" as const };
    expect(
      handlerFailed("PreToolUse", handler("PreToolUse", "guard", closed), "NoResponders", "no responders"),
    ).toEqual({
      handler: "guard",
      status: "error",
      reason: "NoResponders",
      error: { type: "NoResponders", message: "no responders" },
      decision: { handler: "guard", action: "block", reason: "failure_mode closed: no responders" },
      blocks: true,
    });
    const perm = handler("PermissionRequest", "guard", closed);
    expect(handlerFailed("PermissionRequest", perm, "LeaseExpired", "lease expired").decision).toEqual({
      handler: "guard",
      action: "deny",
      reason: "failure_mode closed: lease expired",
    });
  });
});
