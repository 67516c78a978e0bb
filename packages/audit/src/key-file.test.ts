import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { openCheckpoint, signCheckpoint } from "./checkpoint.js";
import { readAuditKeyFile, writeAuditKeyFile } from "./key-file.js";
import { noteVerifier } from "./note-key.js";

const dir = mkdtempSync(path.join(tmpdir(), "geode-key-file-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("audit key files", () => {
  it("writes a 0600 signer key whose verifier checks what it signs", () => {
    const file = path.join(dir, "nested", "audit.key");
    const { verifierKey } = writeAuditKeyFile(file, "test-key");
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readFileSync(file, "utf8")).toMatch(/^PRIVATE\+KEY\+test-key\+[0-9a-f]{8}\+\S+\n$/);
    const signer = readAuditKeyFile(file);
    expect(signer.verifierKey).toBe(verifierKey);
    const note = signCheckpoint({ origin: "geode/t/events", size: 1, rootHash: new Uint8Array(32) }, signer);
    expect(openCheckpoint(note, { verifiers: [noteVerifier(verifierKey)] }).checkpoint.size).toBe(1);
  });

  it("never overwrites a key file", () => {
    const file = path.join(dir, "kept.key");
    writeAuditKeyFile(file);
    const before = readFileSync(file, "utf8");
    expect(() => writeAuditKeyFile(file)).toThrow(expect.objectContaining({ code: "key_file_exists" }));
    expect(readFileSync(file, "utf8")).toBe(before);
  });

  it("refuses a file that holds no signer key", () => {
    const file = path.join(dir, "bad.key");
    writeFileSync(file, "not a key\n");
    expect(() => readAuditKeyFile(file)).toThrow(expect.objectContaining({ code: "malformed_key" }));
  });
});
