import { GeodeError } from "@geode/contracts";
import { useTestEnv } from "@geode/testing";
import { describe, expect, it } from "vitest";
import { AttemptStore, totalsOf } from "./attempt-store.js";

const env = useTestEnv();
const facts = (rounds: number) => ({
  rounds,
  tool_call_count: rounds,
  usage: { input_tokens: rounds * 10, output_tokens: rounds },
  candidate_sha256: "0".repeat(64),
});

describe("attempt store (KV {ns}_verify)", () => {
  it("keys plain ids as {session_id}.{turn_id} and encodes any other id so sessions never overlap", async () => {
    const store = await AttemptStore.open({ nc: env().nc, names: env().names });
    expect(store.key("s-1", "t_1")).toBe("s-1.t_1");
    const dotted = store.key("a.b", "c");
    expect(dotted.split(".")).toHaveLength(2);
    expect(dotted.startsWith("=")).toBe(true);
    await store.reserve("a.b", "c", facts(1));
    await store.reserve("a", "b.c", facts(1));
    expect((await store.get("a.b", "c"))?.attempts).toHaveLength(1);
    expect((await store.get("a", "b.c"))?.attempts).toHaveLength(1);
  });

  it("numbers attempts from 0 and gives back a failed last attempt without spending the budget", async () => {
    const store = await AttemptStore.open({ nc: env().nc, names: env().names });
    expect(await store.reserve("s", "t", facts(1))).toBe(0);
    expect(await store.reserve("s", "t", facts(2))).toBe(1);
    await store.release("s", "t", 1);
    expect(await store.reserve("s", "t", facts(3))).toBe(1);
    expect(await store.reserve("s", "t", facts(4))).toBe(2);
    // not the last one any more: kept as aborted, out of the totals, still counted
    await store.release("s", "t", 1);
    const rec = await store.get("s", "t");
    expect(rec?.attempts.map((a) => a.state)).toEqual(["running", "aborted", "running"]);
    expect(totalsOf(rec!)).toEqual({
      rounds: 5,
      tool_call_count: 5,
      usage: { input_tokens: 50, output_tokens: 5 },
    });
    expect(await store.reserve("s", "t", facts(1))).toBe(3);
  });

  it("refuses a new attempt of a parked turn with session_paused", async () => {
    const store = await AttemptStore.open({ nc: env().nc, names: env().names });
    await store.reserve("p", "t", facts(1));
    await store.mutate("p", "t", (cur) => ({ ...cur!, status: "parked" }));
    const err = await store.reserve("p", "t", facts(1)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GeodeError);
    expect((err as GeodeError).code).toBe("session_paused");
    expect((await store.get("p", "t"))?.attempts).toHaveLength(1);
  });
});
