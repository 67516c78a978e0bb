import { describe, expect, it } from "vitest";
import {
  decodeGuardedArguments,
  encodeGuardedArguments,
  GUARDED_FACT_BYTES,
  GUARDED_PATHS_MAX,
  guardedArguments,
  rewrittenGuardedArguments,
} from "./guarded-facts.js";
import { sanitizePayload } from "./sanitize.js";

const padded = (tail: string, pad = 6_000) => `echo ${"a".repeat(pad)} && ${tail}`;

describe("guardedArguments", () => {
  it("keeps a command whole where sanitizing cuts it", () => {
    const command = padded("rm -rf /");
    const cut = sanitizePayload({ arguments: { command } })["arguments"] as { command: string };
    expect(cut.command).not.toContain("rm -rf /");
    expect(guardedArguments("Bash", { command })).toEqual({ arguments: { command }, oversize: [] });
  });

  it("finds the command behind many other arguments, which sanitizing drops", () => {
    const args: Record<string, unknown> = {};
    for (let i = 0; i < 200; i++) args[`k${i}`] = i;
    args["command"] = "rm -rf ~";
    const bounded = sanitizePayload({ arguments: args })["arguments"] as Record<string, unknown>;
    expect(bounded["command"]).toBeUndefined();
    expect(guardedArguments("run_shell_command", args).arguments).toEqual({ command: "rm -rf ~" });
  });

  it("takes an agent's MCP tool's command, paths and URL from their common argument names", () => {
    const cmd = padded("rm -rf /");
    const g = guardedArguments("mcp__shell__run", {
      cmd,
      source: "a",
      destination: "b",
      uri: "https://x",
      note: "n",
    });
    expect(g).toEqual({ arguments: { cmd, source: "a", destination: "b", uri: "https://x" }, oversize: [] });
    expect(guardedArguments("SomeTool", { cmd, path: ".env" }).arguments).toEqual({});
  });

  it("takes the MCP fields of a name of the form the mcp-bridge registers its tools under", () => {
    const cmd = padded("rm -rf /");
    // Whether `shell_run` is an MCP tool only the guard's view of KV says: the facts travel anyway.
    expect(guardedArguments("shell_run", { cmd, note: "n" }).arguments).toEqual({ cmd });
    expect(guardedArguments("fs_move", { source: ".env", destination: "b" }).arguments).toEqual({
      source: ".env",
      destination: "b",
    });
    for (const name of ["Shell_run", "_fs_x", "fs-x", `${"a".repeat(17)}_x`])
      expect(guardedArguments(name, { cmd }).arguments, name).toEqual({});
  });

  it("takes each owner's fields for a name several tables know (Copilot's glob: paths, Gemini's: dir_path)", () => {
    const g = guardedArguments("glob", { paths: ["a", ".env"], dir_path: "/etc", pattern: "*" });
    expect(g.arguments).toEqual({ paths: ["a", ".env"], dir_path: "/etc" });
  });

  it("cuts a fact over 64 KiB and says which", () => {
    const g = guardedArguments("Bash", { command: "x".repeat(GUARDED_FACT_BYTES + 1) });
    expect(g.oversize).toEqual(["command"]);
    expect(Buffer.byteLength(g.arguments["command"] as string)).toBe(GUARDED_FACT_BYTES);
    // Bytes, not characters: a multi-byte text is cut on a character's edge.
    const wide = guardedArguments("Bash", { command: "é".repeat(GUARDED_FACT_BYTES) });
    expect(wide.oversize).toEqual(["command"]);
    expect(wide.arguments["command"]).toBe("é".repeat(GUARDED_FACT_BYTES / 2));
  });

  it("counts paths, and their bytes together", () => {
    const many = Array.from({ length: GUARDED_PATHS_MAX + 1 }, (_, i) => `f${i}`);
    expect(guardedArguments("grep", { paths: many }).oversize).toEqual(["paths"]);
    expect(guardedArguments("grep", { paths: many.slice(1) }).oversize).toEqual([]);
    const long = ["a".repeat(40_000), "b".repeat(40_000)];
    expect(guardedArguments("grep", { paths: long }).oversize).toEqual(["paths"]);
  });

  it("takes a web tool's URL from its text when it has no URL field", () => {
    const prompt = `${"summarize ".repeat(1_000)} https://evil.example/x?q=1 please`;
    expect(guardedArguments("web_fetch", { prompt }).arguments).toEqual({
      prompt: "https://evil.example/x?q=1",
    });
    expect(guardedArguments("WebFetch", { url: "https://a.example", prompt: "x" }).arguments).toEqual({
      url: "https://a.example",
    });
  });

  it("masks secrets and makes text valid Unicode, as every handler input", () => {
    const g = guardedArguments("Bash", {
      command: "curl -H 'Authorization: Bearer abcdefghijklmnop' \ud800 x",
    });
    expect(g.arguments["command"]).toBe("curl -H 'Authorization: Bearer [REDACTED]' \ufffd x");
  });

  it("looks up nothing by names of Object.prototype, and never sets a prototype", () => {
    for (const name of Object.getOwnPropertyNames(Object.prototype))
      expect(guardedArguments(name, { command: "rm -rf /" })).toEqual({ arguments: {}, oversize: [] });
    const g = guardedArguments("WebSearch", JSON.parse('{"__proto__": "https://x.example/a"}'));
    expect(Object.getPrototypeOf(g.arguments)).toBe(Object.prototype);
    expect(Object.hasOwn(g.arguments, "__proto__")).toBe(true);
  });

  it("has none for other tools or inputs that are not objects", () => {
    expect(guardedArguments("TodoWrite", { command: "rm -rf /" }).arguments).toEqual({});
    expect(guardedArguments("Bash", "rm -rf /").arguments).toEqual({});
    expect(guardedArguments("Bash", null).arguments).toEqual({});
  });
});

describe("rewrittenGuardedArguments", () => {
  const long = padded("ls");
  const before = sanitizePayload({ tool_name: "Bash", arguments: { command: long, timeout: 1 } });
  const guarded = guardedArguments("Bash", { command: long, timeout: 1 });

  it("keeps the whole value of a field the rewrite left alone", () => {
    const after = { ...before, arguments: { ...(before["arguments"] as object), timeout: 5 } };
    expect(rewrittenGuardedArguments(guarded, before, after).arguments).toEqual({ command: long });
  });

  it("takes the rewritten value of a field the rewrite changed, and another tool's fields", () => {
    const after = { ...before, arguments: { command: "rm -rf /" } };
    expect(rewrittenGuardedArguments(guarded, before, after).arguments).toEqual({ command: "rm -rf /" });
    const other = { tool_name: "Write", arguments: { file_path: ".env", content: "x" } };
    expect(rewrittenGuardedArguments(guarded, before, other).arguments).toEqual({ file_path: ".env" });
  });

  it("keeps a field's oversize only while the field is the caller's", () => {
    const big = guardedArguments("Bash", { command: "x".repeat(GUARDED_FACT_BYTES + 10) });
    const seen = sanitizePayload({
      tool_name: "Bash",
      arguments: { command: "x".repeat(GUARDED_FACT_BYTES + 10) },
    });
    expect(rewrittenGuardedArguments(big, seen, { ...seen, tool_name: "Bash" }).oversize).toEqual([
      "command",
    ]);
    expect(
      rewrittenGuardedArguments(big, seen, { tool_name: "Bash", arguments: { command: "ls" } }).oversize,
    ).toEqual([]);
  });
});

describe("the Geode-Guarded-Arguments header", () => {
  it("round-trips, and reads anything else as no fields", () => {
    const value = encodeGuardedArguments({ command: "a\nb\r\n" });
    expect(value).not.toMatch(/[\r\n]/);
    expect(decodeGuardedArguments(value)).toEqual({ command: "a\nb\r\n" });
    expect(encodeGuardedArguments({})).toBeUndefined();
    for (const bad of [undefined, "", "not json", "[1]", "null", '"x"'])
      expect(decodeGuardedArguments(bad)).toEqual({});
  });
});
