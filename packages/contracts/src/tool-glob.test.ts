import { describe, expect, it } from "vitest";
import { matchesToolGlob, toolGlob } from "./tool-glob.js";

describe("tool-name globs", () => {
  it("matches * across dots, ? as one character, the rest literally", () => {
    expect(matchesToolGlob("fs.*", "fs.read")).toBe(true);
    expect(matchesToolGlob("fs.*", "fs.dir.list")).toBe(true);
    expect(matchesToolGlob("fs.*", "fsxread")).toBe(false);
    expect(matchesToolGlob("fs.*", "shell")).toBe(false);
    expect(matchesToolGlob("shell", "shell")).toBe(true);
    expect(matchesToolGlob("shell", "shell2")).toBe(false);
    expect(matchesToolGlob("g?t", "git")).toBe(true);
    expect(matchesToolGlob("a+b", "aab")).toBe(false);
    expect(matchesToolGlob("*", "anything")).toBe(true);
  });

  it("compiles a list into one predicate", () => {
    const m = toolGlob(["fs.*", "shell"]);
    expect(["fs.write", "shell", "web.get"].map(m)).toEqual([true, true, false]);
  });
});
