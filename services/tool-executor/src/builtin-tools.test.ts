import { mkdtempSync, readFileSync, symlinkSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { builtinTools } from "./builtin-tools.js";
import { createToolPolicy } from "./tool-policy.js";

const idle = new AbortController().signal;

describe("built-in fs tools", () => {
  const root = mkdtempSync(path.join(os.tmpdir(), "geode-fs-"));
  const outside = mkdtempSync(path.join(os.tmpdir(), "geode-outside-"));
  const tool = (name: string) => builtinTools(root).find((t) => t.definition.name === name)!;

  it("write then read a file under the tool folder", async () => {
    const w = await tool("fs.write").run({ path: "notes/a.txt", content: "héllo" }, { signal: idle });
    expect(w).toEqual({ result: { path: "notes/a.txt", bytes: 6 }, has_error: false });
    expect(readFileSync(path.join(root, "notes/a.txt"), "utf8")).toBe("héllo");
    const r = await tool("fs.read").run({ path: "notes/a.txt" }, { signal: idle });
    expect(r).toEqual({ result: { path: "notes/a.txt", content: "héllo" }, has_error: false });
    expect(tool("fs.write").definition.effect).toBe("mutation");
    expect(tool("fs.read").definition.effect).toBe("read");
  });

  it("refuses paths that escape the folder: .., absolute, or through a symlink", async () => {
    symlinkSync(outside, path.join(root, "link"));
    for (const p of ["../escape.txt", "notes/../../escape.txt", path.join(outside, "x.txt"), "link/x.txt"]) {
      const w = await tool("fs.write").run({ path: p, content: "x" }, { signal: idle });
      expect(w).toEqual({ result: { error: "path escapes the tool folder" }, has_error: true });
      const r = await tool("fs.read").run({ path: p }, { signal: idle });
      expect(r.has_error).toBe(true);
    }
  });

  it("reports a missing file as an error result", async () => {
    await expect(tool("fs.read").run({ path: "nope.txt" }, { signal: idle })).resolves.toEqual({
      result: { error: "ENOENT" },
      has_error: true,
    });
  });
});

describe("tool policy", () => {
  it("a deny glob wins over the allow list; an allow list admits only what it names", () => {
    const policy = createToolPolicy({ deny: ["shell", "fs.write"], allow: ["fs.*", "echo"] });
    expect(policy("fs.read")).toBeNull();
    expect(policy("echo")).toBeNull();
    expect(policy("fs.write")).toMatch(/deny list/);
    expect(policy("shell")).toMatch(/deny list/);
    expect(policy("clock.now")).toMatch(/not on the allow list/);
    expect(createToolPolicy({ deny: [], allow: [] })("anything")).toBeNull();
  });
});
