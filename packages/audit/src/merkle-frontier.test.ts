import { createHash, randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { frontierAt, MemoryHashStore } from "./hash-store.js";
import { MerkleFrontier } from "./merkle-frontier.js";

// A recursive MTH written here from RFC 9162 section 2.1.1, over leaf hashes.
const H = (...parts: Uint8Array[]) =>
  new Uint8Array(createHash("sha256").update(Buffer.concat(parts)).digest());
function mth(leafHashes: Uint8Array[]): Uint8Array {
  if (leafHashes.length === 0) return H();
  if (leafHashes.length === 1) return leafHashes[0]!;
  let k = 1;
  while (k * 2 < leafHashes.length) k *= 2;
  return H(Uint8Array.of(1), mth(leafHashes.slice(0, k)), mth(leafHashes.slice(k)));
}
const leaves = (n: number) => Array.from({ length: n }, () => H(Uint8Array.of(0), randomBytes(8)));

describe("MerkleFrontier", () => {
  it("has the root of the recursive definition at every size 0..300", () => {
    const hashes = leaves(300);
    const frontier = new MerkleFrontier();
    for (let size = 0; size <= 300; size++) {
      expect(frontier.size).toBe(size);
      expect(frontier.root()).toEqual(mth(hashes.slice(0, size)));
      if (size < 300) frontier.append(hashes[size]!);
    }
  });

  it("has the same roots when appending without the completed nodes (appendHash)", () => {
    const hashes = leaves(300);
    const frontier = new MerkleFrontier();
    for (let size = 0; size <= 300; size++) {
      expect(frontier.size).toBe(size);
      expect(frontier.root()).toEqual(mth(hashes.slice(0, size)));
      if (size < 300) frontier.appendHash(hashes[size]!);
    }
    expect(() => frontier.appendHash(new Uint8Array(31))).toThrow(
      expect.objectContaining({ code: "invalid_argument" }),
    );
  });

  it("keeps one hash per set bit of its size", () => {
    const frontier = new MerkleFrontier();
    for (const h of leaves(77)) frontier.append(h);
    expect(frontier.hashes).toHaveLength(4); // 77 = 0b1001101
  });

  it("returns, on each append, the leaf and every subtree it completed", () => {
    const frontier = new MerkleFrontier();
    const [a, b, c, d] = leaves(4);
    expect(frontier.append(a!).map(({ level, index }) => [level, index])).toEqual([[0, 0]]);
    expect(frontier.append(b!).map(({ level, index }) => [level, index])).toEqual([
      [0, 1],
      [1, 0],
    ]);
    frontier.append(c!);
    const done = frontier.append(d!);
    expect(done.map(({ level, index }) => [level, index])).toEqual([
      [0, 3],
      [1, 1],
      [2, 0],
    ]);
    expect(done.at(-1)!.hash).toEqual(mth([a!, b!, c!, d!]));
  });

  it("resumes from a JSON snapshot (as a notary stores it) and goes on as if never stopped", () => {
    const hashes = leaves(250);
    const straight = new MerkleFrontier();
    for (const h of hashes) straight.append(h);
    for (const cut of [0, 1, 2, 3, 64, 127, 128, 129, 200]) {
      const first = new MerkleFrontier();
      for (const h of hashes.slice(0, cut)) first.append(h);
      const stored = JSON.parse(JSON.stringify(first.snapshot())) as unknown;
      const resumed = MerkleFrontier.restore(stored);
      expect(resumed.root()).toEqual(first.root());
      for (const h of hashes.slice(cut)) resumed.append(h);
      expect(resumed.snapshot()).toEqual(straight.snapshot());
    }
  });

  it("is rebuilt from a hash store at any size", async () => {
    const hashes = leaves(100);
    const store = new MemoryHashStore();
    const frontier = new MerkleFrontier();
    for (const h of hashes) store.put(frontier.append(h));
    for (const size of [0, 1, 37, 64, 99, 100]) {
      const rebuilt = await frontierAt(store, size);
      expect(rebuilt.root()).toEqual(mth(hashes.slice(0, size)));
    }
  });

  it("refuses a snapshot that does not describe a tree", () => {
    const good = new MerkleFrontier();
    for (const h of leaves(5)) good.append(h);
    const { hashes } = good.snapshot();
    const bad: unknown[] = [
      null,
      "x",
      { size: 5 },
      { size: 5, hashes: hashes.slice(1) },
      { size: 4, hashes },
      { size: -1, hashes: [] },
      { size: 1.5, hashes },
      { size: 5, hashes: [hashes[0], "not base64!"] },
      { size: 5, hashes: [hashes[0], Buffer.alloc(31).toString("base64")] },
      { size: 2 ** 60, hashes },
    ];
    for (const snapshot of bad) {
      expect(() => MerkleFrontier.restore(snapshot)).toThrow(
        expect.objectContaining({ code: "malformed_frontier" }),
      );
    }
  });

  it("refuses a leaf hash that is not 32 bytes", () => {
    expect(() => new MerkleFrontier().append(new Uint8Array(31))).toThrow(
      expect.objectContaining({ code: "invalid_argument" }),
    );
  });
});
