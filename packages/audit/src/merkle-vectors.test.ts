/**
 * The tree against published RFC 6962 test vectors: the 8 leaves of transparency-dev/merkle's
 * `testonly/constants.go` (roots of sizes 0..8, node hashes, compact trees), the proofs of its
 * `cmd/proofgen/main.go` (where leaf indexes count from 1), and the probes that proofgen writes to
 * `testdata/inclusion` and `testdata/consistency`, kept in `testdata/merkle-probes.json` (commit
 * 417fb0c314750d94e53942e9f92e79b6d35915db).
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { MemoryHashStore, treeRoot } from "./hash-store.js";
import { MerkleFrontier } from "./merkle-frontier.js";
import { consistencyProof, inclusionProof } from "./merkle-proof.js";
import { verifyConsistency, verifyInclusion } from "./proof-verify.js";
import { EMPTY_ROOT, leafHash } from "./tree-hash.js";

const hex = (h: Uint8Array) => Buffer.from(h).toString("hex");
const bytes = (s: string) => new Uint8Array(Buffer.from(s, "hex"));
const b64 = (s: string) => new Uint8Array(Buffer.from(s, "base64"));

const LEAVES = [
  "",
  "00",
  "10",
  "2021",
  "3031",
  "40414243",
  "5051525354555657",
  "606162636465666768696a6b6c6d6e6f",
];

const ROOTS = [
  "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
  "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
  "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
  "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
  "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
  "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
  "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
  "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
  "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
];

const NODES = [
  [
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
    "0298d122906dcfc10892cb53a73992fc5b9f493ea4c9badb27b791b4127a7fe7",
    "07506a85fd9dd2f120eb694f86011e5bb4662e5c415a62917033d4a9624487e7",
    "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
    "4271a26be0d8a84f0bd54c8c302e7cb3a3b5d1fa6780a40bcce2873477dab658",
    "b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f",
    "46f6ffadd3d06a09ff3c5860d2755c8b9819db7df44251788c7d8e3180de8eb1",
  ],
  [
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
    "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
    "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
  ],
  [
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
  ],
  ["5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328"],
];
const node = (level: number, index: number) => NODES[level]![index]!;

/** constants.go's CompactTrees: the frontier of each size, as [level, index] of NODES. */
const COMPACT: [number, number][][] = [
  [],
  [[0, 0]],
  [[1, 0]],
  [
    [1, 0],
    [0, 2],
  ],
  [[2, 0]],
  [
    [2, 0],
    [0, 4],
  ],
  [
    [2, 0],
    [1, 2],
  ],
  [
    [2, 0],
    [1, 2],
    [0, 6],
  ],
  [[3, 0]],
];

/** proofgen's inclusionProofs (1-based leaf, size, path) and consistencyProofs (size1, size2, path). */
const INCLUSION: [number, number, string[]][] = [
  [1, 1, []],
  [1, 8, [node(0, 1), node(1, 1), node(2, 1)]],
  [6, 8, [node(0, 4), node(1, 3), node(2, 0)]],
  [3, 3, [node(1, 0)]],
  [2, 5, [node(0, 0), node(1, 1), node(0, 4)]],
];
const CONSISTENCY: [number, number, string[]][] = [
  [1, 1, []],
  [1, 8, [node(0, 1), node(1, 1), node(2, 1)]],
  [6, 8, [node(1, 2), node(1, 3), node(2, 0)]],
  [2, 5, [node(1, 1), node(0, 4)]],
  [6, 7, [node(1, 2), node(0, 6), node(2, 0)]],
];

/** The tree of the 8 leaves, with every node stored, and the frontier after each size. */
function vectorTree() {
  const store = new MemoryHashStore();
  const frontier = new MerkleFrontier();
  const frontiers = [frontier.hashes];
  const roots = [frontier.root()];
  for (const leaf of LEAVES) {
    store.put(frontier.append(leafHash(bytes(leaf))));
    frontiers.push(frontier.hashes);
    roots.push(frontier.root());
  }
  return { store, frontiers, roots };
}

describe("RFC 6962 test vectors", () => {
  const tree = vectorTree();

  it("hashes the empty tree, the leaves and every complete subtree as published", () => {
    expect(hex(EMPTY_ROOT)).toBe(ROOTS[0]);
    for (const [level, hashes] of NODES.entries()) {
      for (const [index, hash] of hashes.entries())
        expect(hex(tree.store.node({ level, index })!)).toBe(hash);
    }
  });

  it("gives the published root and compact range at every size 0..8", async () => {
    for (let size = 0; size <= 8; size++) {
      expect(hex(tree.roots[size]!)).toBe(ROOTS[size]);
      expect(hex(await treeRoot(tree.store, size))).toBe(ROOTS[size]);
      expect(tree.frontiers[size]!.map(hex)).toEqual(COMPACT[size]!.map(([l, i]) => node(l, i)));
    }
  });

  it("generates the published inclusion proofs, which verify", async () => {
    for (const [leaf, size, path] of INCLUSION) {
      const proof = await inclusionProof(tree.store, { index: leaf - 1, size });
      expect(proof.map(hex)).toEqual(path);
      const leafH = tree.store.node({ level: 0, index: leaf - 1 })!;
      expect(
        verifyInclusion({ index: leaf - 1, size, leafHash: leafH, path: proof, root: bytes(ROOTS[size]!) }),
      ).toBe(true);
    }
  });

  it("generates the published consistency proofs, which verify", async () => {
    for (const [size1, size2, path] of CONSISTENCY) {
      const proof = await consistencyProof(tree.store, { size1, size2 });
      expect(proof.map(hex)).toEqual(path);
      const [root1, root2] = [bytes(ROOTS[size1]!), bytes(ROOTS[size2]!)];
      expect(verifyConsistency({ size1, size2, root1, root2, path: proof })).toBe(true);
    }
  });
});

interface Probe {
  file: string;
  desc: string;
  wantErr: boolean;
  proof: string[];
}
const probes = JSON.parse(
  readFileSync(new URL("./testdata/merkle-probes.json", import.meta.url), "utf8"),
) as {
  inclusion: (Probe & { leafIdx: number; treeSize: number; root: string; leafHash: string })[];
  consistency: (Probe & { size1: number; size2: number; root1: string; root2: string })[];
};

/**
 * Where this verifier is stricter than Go's on purpose: it wants every root to be a 32-byte hash,
 * and Go's accepts equal sizes with equal roots of any length.
 */
const STRICTER = new Set(["consistency/additional/sizes-are-equal-one-and-proof-is-empty.json"]);

describe("transparency-dev/merkle probes", () => {
  it("accepts each happy path and refuses each mangled proof", () => {
    expect(probes.inclusion.length).toBeGreaterThan(90);
    for (const p of probes.inclusion) {
      const ok = verifyInclusion({
        index: p.leafIdx,
        size: p.treeSize,
        leafHash: b64(p.leafHash),
        path: p.proof.map(b64),
        root: b64(p.root),
      });
      expect({ file: p.file, ok }).toEqual({ file: p.file, ok: !p.wantErr });
    }
  });

  it("accepts each consistent pair and refuses each mangled one", () => {
    expect(probes.consistency.length).toBeGreaterThan(90);
    for (const p of probes.consistency) {
      const check = { size1: p.size1, size2: p.size2, root1: b64(p.root1), root2: b64(p.root2) };
      const ok = verifyConsistency({ ...check, path: p.proof.map(b64) });
      const want = !p.wantErr && !STRICTER.has(p.file);
      expect({ file: p.file, ok }).toEqual({ file: p.file, ok: want });
    }
  });
});
