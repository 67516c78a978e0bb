/**
 * Proofs the package generates, checked by a second implementation written here straight from
 * RFC 9162 (MTH and PATH of section 2.1.1 and 2.1.3.1, PROOF/SUBPROOF of 2.1.4.1, the verifiers of
 * 2.1.3.2 and 2.1.4.2), recursive where the package is iterative, with its own SHA-256 calls.
 */
import { createHash, randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { MemoryHashStore, treeRoot } from "./hash-store.js";
import { MerkleFrontier } from "./merkle-frontier.js";
import { consistencyProof, inclusionProof } from "./merkle-proof.js";
import { rootFromInclusionProof, verifyConsistency, verifyInclusion } from "./proof-verify.js";

// ---- The reference, from the RFC's text. ----
type Bytes = Uint8Array;
const H = (...parts: Bytes[]): Bytes =>
  new Uint8Array(createHash("sha256").update(Buffer.concat(parts)).digest());
const leafH = (d: Bytes) => H(Uint8Array.of(0), d);
const nodeH = (l: Bytes, r: Bytes) => H(Uint8Array.of(1), l, r);
const eq = (a: Bytes, b: Bytes) => Buffer.from(a).equals(Buffer.from(b));
/** k: the largest power of two smaller than n. */
const largestPow2Below = (n: number) => 2 ** Math.ceil(Math.log2(n) - 1);

/** MTH(D[n]) over leaf data. */
function mth(d: Bytes[]): Bytes {
  if (d.length === 0) return H();
  if (d.length === 1) return leafH(d[0]!);
  const k = largestPow2Below(d.length);
  return nodeH(mth(d.slice(0, k)), mth(d.slice(k)));
}

/** PATH(m, D[n]). */
function path(m: number, d: Bytes[]): Bytes[] {
  if (d.length === 1) return [];
  const k = largestPow2Below(d.length);
  return m < k
    ? [...path(m, d.slice(0, k)), mth(d.slice(k))]
    : [...path(m - k, d.slice(k)), mth(d.slice(0, k))];
}

/** SUBPROOF(m, D[n], b). */
function subproof(m: number, d: Bytes[], b: boolean): Bytes[] {
  if (m === d.length) return b ? [] : [mth(d)];
  const k = largestPow2Below(d.length);
  return m <= k
    ? [...subproof(m, d.slice(0, k), b), mth(d.slice(k))]
    : [...subproof(m - k, d.slice(k), false), mth(d.slice(0, k))];
}

/** Section 2.1.3.2. */
function refVerifyInclusion(index: number, size: number, hash: Bytes, p: Bytes[], root: Bytes): boolean {
  if (index >= size) return false;
  let fn = index;
  let sn = size - 1;
  let r = hash;
  for (const q of p) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      r = nodeH(q, r);
      if (fn % 2 === 0) {
        do {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        } while (fn % 2 === 0 && fn !== 0);
      }
    } else {
      r = nodeH(r, q);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 && eq(r, root);
}

/** Section 2.1.4.2, for 0 < first < second. */
function refVerifyConsistency(first: number, second: number, h1: Bytes, h2: Bytes, proof: Bytes[]): boolean {
  if (proof.length === 0) return false;
  const p = Number.isInteger(Math.log2(first)) ? [h1, ...proof] : [...proof];
  let fn = first - 1;
  let sn = second - 1;
  while (fn % 2 === 1) {
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  let fr = p[0]!;
  let sr = p[0]!;
  for (const c of p.slice(1)) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      fr = nodeH(c, fr);
      sr = nodeH(c, sr);
      if (fn % 2 === 0) {
        do {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        } while (fn % 2 === 0 && fn !== 0);
      }
    } else {
      sr = nodeH(sr, c);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 && eq(fr, h1) && eq(sr, h2);
}

// ---- The package's tree, fed random leaves. ----
function randomTree(size: number) {
  const data = Array.from({ length: size }, () => randomBytes(Math.floor(Math.random() * 40)));
  const store = new MemoryHashStore();
  const frontier = new MerkleFrontier();
  for (const d of data) store.put(frontier.append(leafH(d)));
  return { data: data.map((d) => new Uint8Array(d)), store, frontier };
}
const pick = (n: number) => Math.floor(Math.random() * n);
/** A copy of the proof with one bit of one hash flipped. */
function flipped(proof: Bytes[]): Bytes[] {
  const copy = proof.map((h) => new Uint8Array(h));
  copy[pick(copy.length)]![pick(32)]! ^= 1 << pick(8);
  return copy;
}
const SIZES = [
  1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 63, 64, 65, 100, 127, 129, 255, 256, 257, 1000, 1023, 1025,
];
const sizes = [...SIZES, ...Array.from({ length: 6 }, () => 2 + pick(4000))];

describe("inclusion proofs", () => {
  it.each(sizes)("are RFC 9162 paths that the reference accepts, size %i", async (size) => {
    const { data, store, frontier } = randomTree(size);
    const root = frontier.root();
    expect(root).toEqual(mth(data));
    for (const index of new Set([0, size - 1, pick(size), pick(size), pick(size)])) {
      const proof = await inclusionProof(store, { index, size });
      // The reference PATH needs the whole tree's leaves at each step: check it on the smaller trees.
      if (size <= 1025) expect(proof).toEqual(path(index, data));
      expect(refVerifyInclusion(index, size, leafH(data[index]!), proof, root)).toBe(true);
      expect(verifyInclusion({ index, size, leafHash: leafH(data[index]!), path: proof, root })).toBe(true);
      if (proof.length === 0) continue;
      const bad = flipped(proof);
      expect(refVerifyInclusion(index, size, leafH(data[index]!), bad, root)).toBe(false);
      expect(verifyInclusion({ index, size, leafHash: leafH(data[index]!), path: bad, root })).toBe(false);
      expect(verifyInclusion({ index, size, leafHash: leafH(randomBytes(3)), path: proof, root })).toBe(
        false,
      );
      expect(
        verifyInclusion({ index, size, leafHash: leafH(data[index]!), path: proof.slice(1), root }),
      ).toBe(false);
    }
  });

  it("proves a leaf in every earlier tree head too", async () => {
    const { data, store } = randomTree(300);
    for (let size = 1; size <= 300; size++) {
      const index = pick(size);
      const proof = await inclusionProof(store, { index, size });
      const root = await treeRoot(store, size);
      expect(refVerifyInclusion(index, size, leafH(data[index]!), proof, root)).toBe(true);
    }
  });

  it("refuses a path of the wrong length with invalid_proof, an index past the tree with invalid_argument", async () => {
    const { data, store } = randomTree(10);
    const proof = await inclusionProof(store, { index: 3, size: 10 });
    const leafHash = leafH(data[3]!);
    expect(() =>
      rootFromInclusionProof({ index: 3, size: 10, leafHash, path: [...proof, proof[0]!] }),
    ).toThrow(expect.objectContaining({ code: "invalid_proof" }));
    expect(() => rootFromInclusionProof({ index: 3, size: 10, leafHash, path: proof.slice(0, -1) })).toThrow(
      expect.objectContaining({ code: "invalid_proof" }),
    );
    await expect(inclusionProof(store, { index: 10, size: 10 })).rejects.toMatchObject({
      code: "invalid_argument",
    });
    await expect(inclusionProof(store, { index: 0, size: 11 })).rejects.toMatchObject({
      code: "missing_node",
    });
  });
});

describe("consistency proofs", () => {
  it.each(sizes)("are RFC 9162 proofs that the reference accepts, up to size %i", async (size2) => {
    const { data, store, frontier } = randomTree(size2);
    const root2 = frontier.root();
    for (const size1 of new Set([1, size2 - 1, 1 + pick(size2), 1 + pick(size2), 1 + pick(size2)])) {
      if (size1 < 1 || size1 >= size2) continue;
      const proof = await consistencyProof(store, { size1, size2 });
      const root1 = await treeRoot(store, size1);
      if (size2 <= 1025) {
        expect(root1).toEqual(mth(data.slice(0, size1)));
        expect(proof).toEqual(subproof(size1, data, true));
      }
      expect(refVerifyConsistency(size1, size2, root1, root2, proof)).toBe(true);
      expect(verifyConsistency({ size1, size2, root1, root2, path: proof })).toBe(true);
      const bad = flipped(proof);
      expect(refVerifyConsistency(size1, size2, root1, root2, bad)).toBe(false);
      expect(verifyConsistency({ size1, size2, root1, root2, path: bad })).toBe(false);
      expect(verifyConsistency({ size1, size2, root1: root2, root2: root1, path: proof })).toBe(false);
    }
  });

  it("holds between every pair of sizes of a small tree, and fails against another tree", async () => {
    const a = randomTree(40);
    const b = randomTree(40);
    for (let size2 = 1; size2 <= 40; size2++) {
      const root2 = await treeRoot(a.store, size2);
      for (let size1 = 1; size1 < size2; size1++) {
        const proof = await consistencyProof(a.store, { size1, size2 });
        const root1 = await treeRoot(a.store, size1);
        expect(refVerifyConsistency(size1, size2, root1, root2, proof)).toBe(true);
        expect(verifyConsistency({ size1, size2, root1, root2, path: proof })).toBe(true);
        const other = await treeRoot(b.store, size1);
        expect(verifyConsistency({ size1, size2, root1: other, root2, path: proof })).toBe(false);
      }
    }
  });

  it("is empty from the empty tree and between equal sizes, and refuses size1 > size2", async () => {
    const { store, frontier } = randomTree(5);
    const root = frontier.root();
    expect(await consistencyProof(store, { size1: 0, size2: 5 })).toEqual([]);
    expect(await consistencyProof(store, { size1: 5, size2: 5 })).toEqual([]);
    expect(verifyConsistency({ size1: 0, size2: 5, root1: H(), root2: root, path: [] })).toBe(true);
    expect(verifyConsistency({ size1: 0, size2: 5, root1: root, root2: root, path: [] })).toBe(false);
    expect(verifyConsistency({ size1: 5, size2: 5, root1: root, root2: root, path: [] })).toBe(true);
    expect(verifyConsistency({ size1: 5, size2: 5, root1: root, root2: H(), path: [] })).toBe(false);
    await expect(consistencyProof(store, { size1: 6, size2: 5 })).rejects.toMatchObject({
      code: "invalid_argument",
    });
  });
});
