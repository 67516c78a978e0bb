import { describe, expect, it } from "vitest";
import { handler } from "./chain-fixture.js";
import { handlerTurn } from "./handler-turn.js";

const NOW = 1_700_000_000_000;

describe("handlerTurn", () => {
  it("calls a live handler without a match for every call", () => {
    expect(handlerTurn(handler("UserPromptSubmit", "h", { heartbeat_at: NOW }), {}, NOW)).toBe("call");
  });

  it("skips a tool hook handler whose match does not cover the tool_name as rewritten so far", () => {
    const h = handler("PreToolUse", "fs-guard", { match: { tool_name: ["fs.*"] }, heartbeat_at: NOW });
    expect(handlerTurn(h, { tool_name: "fs.write" }, NOW)).toBe("call");
    expect(handlerTurn(h, { tool_name: "shell" }, NOW)).toBe("skip");
    expect(handlerTurn(h, {}, NOW)).toBe("skip");
  });

  it("past its lease: an open handler is skipped silently, a closed one fails closed", () => {
    const reg = { heartbeat_at: NOW - 61_000, lease_ms: 60_000 };
    expect(handlerTurn(handler("PreToolUse", "o", reg), {}, NOW)).toBe("skip");
    expect(handlerTurn(handler("PreToolUse", "c", { ...reg, failure_mode: "closed" }), {}, NOW)).toBe(
      "lease_expired",
    );
    expect(handlerTurn(handler("PreToolUse", "c", { ...reg, failure_mode: "closed" }), {}, NOW - 1_000)).toBe(
      "call",
    );
  });
});
