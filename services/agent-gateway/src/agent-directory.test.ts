import { type AgentRecord, sha256 } from "@geode/contracts";
import { waitFor } from "@geode/testing";
import { describe, expect, it } from "vitest";
import { AgentDirectory } from "./agent-directory.js";
import type { Plane } from "./plane.js";

const record = (name: string, token: string): AgentRecord => ({
  name,
  token_sha256: sha256(token),
  created_at: 1,
});

/**
 * The two things the directory asks of the plane, with a watch that delivers the first snapshot
 * and then stalls: only the periodic re-read can bring news.
 */
function stalledPlane(bucket: Map<string, AgentRecord>, list: () => Promise<AgentRecord[]>) {
  let apply: ((name: string, record: AgentRecord | null) => void) | undefined;
  const plane = {
    async followAgents(fn: (name: string, record: AgentRecord | null) => void) {
      apply = fn;
      for (const [name, r] of bucket) fn(name, r);
      return { stop: () => undefined };
    },
    listAgents: list,
  } as unknown as Plane;
  return { plane, deliver: (name: string, r: AgentRecord | null) => apply?.(name, r) };
}

describe("AgentDirectory", () => {
  it("drops a removed agent within the re-read interval even when the watch stalls", async () => {
    const bucket = new Map([["laptop", record("laptop", "t1")]]);
    const { plane } = stalledPlane(bucket, async () => [...bucket.values()]);
    const directory = await AgentDirectory.start(plane, { resyncMs: 50 });
    try {
      expect(directory.identify("Bearer t1")).toBe("laptop");
      bucket.delete("laptop"); // `geode agents rm laptop`, never delivered by the watch
      bucket.set("ci", record("ci", "t2"));
      await waitFor(() => directory.identify("Bearer t1") === null, 2_000);
      expect(directory.identify("Bearer t2")).toBe("ci");
      expect(directory.size()).toBe(1);
    } finally {
      directory.stop();
    }
  });

  it("does not apply a re-read over a change the watch delivered while it ran", async () => {
    const bucket = new Map([["laptop", record("laptop", "t1")]]);
    let release: (agents: AgentRecord[]) => void = () => undefined;
    let reads = 0;
    const { plane, deliver } = stalledPlane(bucket, () => {
      reads++;
      return new Promise((resolve) => {
        release = resolve;
      });
    });
    const directory = await AgentDirectory.start(plane, { resyncMs: 20 });
    try {
      await waitFor(() => reads >= 1, 2_000);
      // The read saw the bucket before `geode agents add ci`; the watch then delivers the addition.
      const stale = [...bucket.values()];
      deliver("ci", record("ci", "t2"));
      release(stale);
      await new Promise((r) => setTimeout(r, 10));
      expect(directory.identify("Bearer t2")).toBe("ci");
      expect(directory.identify("Bearer t1")).toBe("laptop");
    } finally {
      directory.stop();
    }
  });
});
