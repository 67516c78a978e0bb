import type { Logger } from "@geode/bus";
import { sha256 } from "@geode/contracts";
import { describe, expect, it } from "vitest";
import { RefusedTokenLog } from "./refused-token-log.js";

/** A logger that keeps its warnings, and a clock the test moves. */
function kept() {
  const lines: Array<Record<string, unknown>> = [];
  const log = { warn: (fields: Record<string, unknown>) => lines.push(fields) } as unknown as Logger;
  const clock = { now: 1_000_000 };
  return { lines, clock, refused: new RefusedTokenLog(log, () => clock.now) };
}

describe("the refused-token log", () => {
  it("writes one line per address a minute, counting the refusals it stood for", () => {
    const { lines, clock, refused } = kept();
    for (let i = 0; i < 5; i++) refused.note("10.0.0.1", "/v1/codex/hook", "Bearer geode_agent_wrong");
    refused.note("10.0.0.2", "/v1/codex/hook", undefined);
    expect(lines).toHaveLength(2);
    clock.now += 59_999;
    refused.note("10.0.0.1", "/v1/codex/hook", "Bearer geode_agent_wrong");
    expect(lines).toHaveLength(2);
    clock.now += 1;
    refused.note("10.0.0.1", "/v1/codex/hook", "Basic x y");
    expect(lines).toHaveLength(3);
    expect(lines[0]).toEqual({
      remote_addr: "10.0.0.1",
      path: "/v1/codex/hook",
      token_sha256_prefix: sha256("geode_agent_wrong").slice(0, 12),
      why: "unknown",
      refused_before: 0,
    });
    expect(lines[1]).toMatchObject({
      remote_addr: "10.0.0.2",
      token_sha256_prefix: null,
      why: "no bearer token",
    });
    expect(lines[2]).toMatchObject({ why: "malformed", token_sha256_prefix: null, refused_before: 6 });
    expect(JSON.stringify(lines)).not.toContain("geode_agent_wrong");
  });

  it("remembers a bounded number of addresses: a flood from many is still logged, in bounded memory", () => {
    const { lines, refused } = kept();
    for (let i = 0; i < 5_000; i++) refused.note(`10.1.${i >> 8}.${i & 255}`, "/v1/codex/hook", undefined);
    expect(lines).toHaveLength(5_000);
    // The first address was forgotten to make room, so it is logged again within its minute.
    refused.note("10.1.0.0", "/v1/codex/hook", undefined);
    expect(lines).toHaveLength(5_001);
    // The latest one is remembered.
    refused.note("10.1.19.135", "/v1/codex/hook", undefined);
    expect(lines).toHaveLength(5_001);
  });
});
