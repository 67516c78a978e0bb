import { createHash } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { readAuditKeyFile, writeAuditKeyFile } from "@geode/audit";
import { runCliCaptured } from "@geode/cli/testing";
import { AuditStore, type Notary, startNotary } from "@geode/notary";
import { openProjectionDb, type ProjectionDb } from "@geode/projection";
import { createLogger } from "@geode/service";
import { useTestEnv, waitFor } from "@geode/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// RFC 9162 inclusion verification written from the RFC (section 2.1.3.2), apart from @geode/audit.
const sha256 = (...parts: Buffer[]) => createHash("sha256").update(Buffer.concat(parts)).digest();
const rfcLeafHash = (leaf: Buffer) => sha256(Buffer.of(0), leaf);
function rfcVerifyInclusion(
  index: number,
  size: number,
  leaf: Buffer,
  proof: Buffer[],
  root: Buffer,
): boolean {
  if (index >= size) return false;
  let fn = index;
  let sn = size - 1;
  let r = leaf;
  for (const p of proof) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      r = sha256(Buffer.of(1), p, r);
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn >>= 1;
          sn >>= 1;
        }
      }
    } else {
      r = sha256(Buffer.of(1), r, p);
    }
    fn >>= 1;
    sn >>= 1;
  }
  return sn === 0 && r.equals(root);
}
/** The checkpoint's size and root, read from the note text as C2SP writes it. */
function noteTree(note: string): { size: number; root: Buffer } {
  const [, size, root] = note.split("\n");
  return { size: Number(size), root: Buffer.from(root!, "base64") };
}

const env = useTestEnv();
const dir = mkdtempSync(path.join(tmpdir(), "geode-audit-proof-"));
const keyFile = path.join(dir, "notary.key");
let notary: Notary;
let db: ProjectionDb;
let store: AuditStore;
const seqs: number[] = [];
let periodStart = 0;

const cli = (...argv: string[]) =>
  runCliCaptured(["audit", ...argv], {
    ...process.env,
    NATS_URL: env().natsUrl,
    DATABASE_URL: env().databaseUrl,
    GEODE_NAMESPACE: env().ns,
    GEODE_AUDIT_KEY_FILE: keyFile,
  });
/** check-proof with nothing of the plane in its environment: no NATS, no database, no namespace. */
const offline = (...argv: string[]) =>
  runCliCaptured(["audit", "check-proof", ...argv], {
    PATH: process.env["PATH"],
    NATS_URL: "nats://127.0.0.1:1",
    DATABASE_URL: "postgres://nobody@127.0.0.1:1/none",
  });
const vkey = () => readAuditKeyFile(keyFile).verifierKey;

beforeAll(async () => {
  writeAuditKeyFile(keyFile, "proof-test");
  notary = await startNotary({
    nc: env().nc,
    names: env().names,
    log: createLogger("notary", "warn"),
    databaseUrl: env().databaseUrl,
    keyFile,
    checkpointMs: 200,
    leaseMs: 1_500,
  });
  db = await openProjectionDb({ ns: env().ns, databaseUrl: env().databaseUrl, migrate: false });
  store = new AuditStore(db.root, env().ns);
  for (let i = 0; i < 7; i++)
    seqs.push(
      (await env().js.publish(env().names.event("turn_completed"), `{"early":${i}}`, { msgID: `early-${i}` }))
        .seq,
    );
  await new Promise((r) => setTimeout(r, 20));
  periodStart = Date.now();
  for (let i = 0; i < 6; i++)
    seqs.push(
      (await env().js.publish(env().names.event("turn_completed"), `{"late":${i}}`, { msgID: `late-${i}` }))
        .seq,
    );
  await waitFor(
    async () => (await store.latestCheckpoint("events").catch(() => undefined))?.size === 13,
    60_000,
    100,
  );
}, 120_000);
afterAll(async () => {
  await notary?.stop();
  await db?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("geode audit prove and check-proof", () => {
  it("prove prints the proof as DESIGN section 20 shapes it; check-proof passes offline", async () => {
    const r = await cli("prove", String(seqs[4]), "--log", "events");
    expect(r.code).toBe(0);
    const proof = JSON.parse(r.out);
    expect(Object.keys(proof)).toEqual([
      "log",
      "seq",
      "leaf_index",
      "tree_size",
      "leaf_hash",
      "path",
      "checkpoint",
    ]);
    expect(proof).toMatchObject({ log: "events", seq: seqs[4], leaf_index: 4, tree_size: 13 });
    expect(proof.checkpoint).toBe((await store.latestCheckpoint("events"))!.note);
    const file = path.join(dir, "proof.json");
    writeFileSync(file, r.out);
    const ok = await offline(file, "--key", vkey());
    expect(ok.code).toBe(0);
    expect(ok.out).toMatch(/^ok: seq \d+ is leaf 4 of the 13-leaf tree of log events/);

    // The independent RFC 9162 check of the same proof.
    const { size, root } = noteTree(proof.checkpoint);
    const path9162 = proof.path.map((p: string) => Buffer.from(p, "base64"));
    expect(rfcVerifyInclusion(4, size, Buffer.from(proof.leaf_hash, "base64"), path9162, root)).toBe(true);
    expect(rfcVerifyInclusion(5, size, Buffer.from(proof.leaf_hash, "base64"), path9162, root)).toBe(false);
  });

  it("an altered leaf, path or key fails (exit 1)", async () => {
    const proof = JSON.parse((await cli("prove", String(seqs[2]))).out);
    const write = (name: string, p: unknown) => {
      const f = path.join(dir, name);
      writeFileSync(f, JSON.stringify(p));
      return f;
    };
    const flip = (b64: string) => {
      const b = Buffer.from(b64, "base64");
      b[0] = b[0]! ^ 1;
      return b.toString("base64");
    };
    const leaf = await offline(
      write("leaf.json", { ...proof, leaf_hash: flip(proof.leaf_hash) }),
      "--key",
      vkey(),
    );
    expect(leaf.code).toBe(1);
    expect(leaf.out).toMatch(/^invalid: the path does not lead to the checkpoint's root/);
    const altered = [...proof.path];
    altered[1] = flip(altered[1]);
    const p = await offline(write("path.json", { ...proof, path: altered }), "--key", vkey());
    expect(p.code).toBe(1);
    const short = await offline(
      write("short.json", { ...proof, path: proof.path.slice(1) }),
      "--key",
      vkey(),
    );
    expect(short.code).toBe(1);
    const { verifierKey: other } = writeAuditKeyFile(path.join(dir, "other.key"), "other");
    const wrongKey = await offline(write("ok.json", proof), "--key", other);
    expect(wrongKey.code).toBe(1);
    expect(wrongKey.out).toMatch(/^invalid: bad signature/);
  });

  it("export writes a period's messages and proofs; check-proof passes for each, and fails for an altered message", {
    timeout: 60_000,
  }, async () => {
    const out = path.join(dir, "export");
    const r = await cli(
      "export",
      "--since",
      new Date(periodStart).toISOString(),
      "--log",
      "events",
      "--out",
      out,
    );
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/events: 6 messages with their proofs/);
    const lines = readFileSync(path.join(out, "events", "messages.jsonl"), "utf8")
      .trim()
      .split("\n");
    expect(lines.map((l) => JSON.parse(l).seq)).toEqual(seqs.slice(7));
    const note = readFileSync(path.join(out, "events", "checkpoint.note"), "utf8");
    const { size, root } = noteTree(note);
    expect(readdirSync(path.join(out, "events", "proofs"))).toHaveLength(6);
    for (const line of lines) {
      const m = JSON.parse(line);
      const proofFile = path.join(out, "events", "proofs", `${m.seq}.json`);
      const messageFile = path.join(out, "events", "messages", `${m.seq}.json`);
      const checked = await offline(proofFile, "--key", vkey(), "--message", messageFile);
      expect(checked.code, checked.out).toBe(0);
      // Independently: the leaf from the message's fields as DESIGN section 20 spells it.
      const data = Buffer.from(m.data_base64, "base64");
      const text = `geode-audit-leaf-v1\n${m.seq}\n${m.subject}\n${m.msg_id}\n${createHash("sha256").update(data).digest("hex")}`;
      const proof = JSON.parse(readFileSync(proofFile, "utf8"));
      expect(proof.checkpoint).toBe(note);
      const leaf = rfcLeafHash(Buffer.from(text));
      expect(leaf.toString("base64")).toBe(proof.leaf_hash);
      expect(
        rfcVerifyInclusion(
          proof.leaf_index,
          size,
          leaf,
          proof.path.map((p: string) => Buffer.from(p, "base64")),
          root,
        ),
      ).toBe(true);
    }
    const first = JSON.parse(lines[0]!);
    const altered = path.join(dir, "altered-message.json");
    writeFileSync(
      altered,
      JSON.stringify({ ...first, data_base64: Buffer.from('{"late":99}').toString("base64") }),
    );
    const bad = await offline(
      path.join(out, "events", "proofs", `${first.seq}.json`),
      "--key",
      vkey(),
      "--message",
      altered,
    );
    expect(bad.code).toBe(1);
    expect(bad.out).toMatch(/^invalid: the message is not the proven leaf/);
  });

  it("check-proof's module imports nothing that connects (no NATS, Postgres, bus or projection)", () => {
    // Every module check-proof's compiled module reaches through relative imports, and what they import.
    const seen = new Set<string>();
    const packages = new Set<string>();
    const visit = (file: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      for (const [, spec] of readFileSync(file, "utf8").matchAll(/(?:from|import)\s*\(?\s*"([^"]+)"/g)) {
        if (spec!.startsWith(".")) visit(path.resolve(path.dirname(file), spec!));
        else packages.add(spec!);
      }
    };
    visit(new URL("../packages/cli/dist/commands/audit-check-proof.js", import.meta.url).pathname);
    expect(seen.size).toBeGreaterThan(2);
    expect([...packages].sort()).toEqual(["@geode/audit", "node:fs", "node:path", "node:util"]);
  });
});

describe("geode audit keygen, key and checkpoint", () => {
  it("keygen writes a 0600 key, never over one, and prints the verifier key on its last line", async () => {
    const { statSync } = await import("node:fs");
    const file = path.join(dir, "made", "new.key");
    const r = await cli("keygen", "--out", file, "--name", "acme-notary");
    expect(r.code).toBe(0);
    const last = r.out.trimEnd().split("\n").at(-1)!;
    expect(last).toMatch(/^acme-notary\+[0-9a-f]{8}\+[A-Za-z0-9+/=]+$/);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readAuditKeyFile(file).verifierKey).toBe(last);
    const before = readFileSync(file, "utf8");
    const again = await cli("keygen", "--out", file);
    expect(again.code).toBe(1);
    expect(again.err).toMatch(/exists already; it is never overwritten/);
    expect(readFileSync(file, "utf8")).toBe(before);
  });

  it("key prints the verifier key of GEODE_AUDIT_KEY_FILE; checkpoint the latest note as signed", async () => {
    const k = await cli("key");
    expect(k).toMatchObject({ code: 0, out: `${vkey()}\n` });
    await waitFor(
      async () =>
        (await cli("checkpoint", "--log", "events")).out === (await store.latestCheckpoint("events"))!.note,
      30_000,
      100,
    );
    const c = await cli("checkpoint", "--log", "events");
    expect(c.code).toBe(0);
    expect(c.out).toBe((await store.latestCheckpoint("events"))!.note);
  });

  it("geode audit --session still lists the hook calls (the table, not a sub-command)", async () => {
    const r = await cli("--session", "nobody", "--json");
    expect(r.code, r.err).toBe(0);
    expect(JSON.parse(r.out)).toEqual([]);
  });
});
