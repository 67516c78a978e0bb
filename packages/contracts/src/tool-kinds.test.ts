import { describe, expect, it } from "vitest";
import { ownEntry } from "./own-entry.js";
import {
  AGENT_TOOLS,
  safetyLevelOfKind,
  TOOL_KINDS,
  TOOL_TARGET_CHARS,
  toolCalledPayload,
  toolFacts,
  toolKindOf,
  toolRefusedPayload,
  toolTarget,
} from "./tool-kinds.js";

describe("the tool-kind table", () => {
  it("maps each agent's shell tool to `shell`, with its command", () => {
    expect(toolFacts("claude-code", "Bash", { command: "rm -rf x" })).toEqual({
      kind: "shell",
      command: "rm -rf x",
    });
    expect(toolFacts("codex", "Bash", { command: "ls" })).toEqual({ kind: "shell", command: "ls" });
    expect(toolFacts("gemini-cli", "run_shell_command", { command: "ls", description: "d" })).toEqual({
      kind: "shell",
      command: "ls",
    });
    expect(toolFacts("copilot", "bash", { command: "ls", mode: "sync" })).toEqual({
      kind: "shell",
      command: "ls",
    });
    expect(toolFacts("qwen-code", "run_shell_command", { command: "ls", is_background: false })).toEqual({
      kind: "shell",
      command: "ls",
    });
    expect(toolFacts("qwen-code", "write_file", { file_path: "/p/.env", content: "x" })).toEqual({
      kind: "file_write",
      paths: ["/p/.env"],
    });
    expect(toolFacts("opencode", "bash", { command: "ls", workdir: "/w" })).toEqual({
      kind: "shell",
      command: "ls",
    });
    expect(toolFacts("opencode", "read", { filePath: "/p/.env" })).toEqual({
      kind: "file_read",
      paths: ["/p/.env"],
    });
    expect(toolFacts("opencode", "webfetch", { url: "https://x.test/", format: "text" })).toEqual({
      kind: "web_fetch",
      url: "https://x.test/",
    });
  });

  it("reads file paths (one or a list) and URLs from where each tool keeps them", () => {
    expect(toolFacts("claude-code", "Read", { file_path: "/p/.env" })).toEqual({
      kind: "file_read",
      paths: ["/p/.env"],
    });
    expect(toolFacts("gemini-cli", "read_many_files", { include: ["a.ts", 3, "b.ts"] })).toEqual({
      kind: "file_read",
      paths: ["a.ts", "b.ts"],
    });
    expect(toolFacts("claude-code", "WebFetch", { url: "https://x.test/a", prompt: "p" })).toEqual({
      kind: "web_fetch",
      url: "https://x.test/a",
    });
    // Gemini's web_fetch names its URLs inside its prompt.
    expect(toolFacts("gemini-cli", "web_fetch", { prompt: "summarize https://evil.test/x please" })).toEqual({
      kind: "web_fetch",
      url: "https://evil.test/x",
    });
  });

  it("knows MCP tools by their names' form, and calls anything else `other`", () => {
    expect(toolKindOf("claude-code", "mcp__github__create_issue").kind).toBe("mcp");
    expect(toolKindOf("gemini-cli", "mcp_files_read").kind).toBe("mcp");
    expect(toolKindOf("codex", "write_stdin").kind).toBe("other");
    expect(toolKindOf(undefined, "fs.write")).toEqual({ kind: "file_write", paths: ["path"] });
    expect(toolFacts("claude-code", "Bash", { command: 42 })).toEqual({ kind: "shell" });
  });

  it("uses only the declared kinds, and reads a safety level from each", () => {
    for (const tools of Object.values(AGENT_TOOLS))
      for (const entry of Object.values(tools)) expect(TOOL_KINDS).toContain(entry.kind);
    expect(safetyLevelOfKind("file_read")).toBe("read");
    expect(safetyLevelOfKind("web_fetch")).toBe("communication");
    expect(safetyLevelOfKind("shell")).toBe("mutation");
    expect(safetyLevelOfKind("other")).toBe("mutation");
  });
});

describe("toolTarget", () => {
  it("is the command, else the paths, else the URL, for every agent's names and the runtime's", () => {
    expect(toolTarget("claude-code", "Bash", { command: "ls  -la\n\t/tmp" })).toBe("ls -la /tmp");
    expect(toolTarget("codex", "Bash", { command: "git status" })).toBe("git status");
    expect(toolTarget("gemini-cli", "run_shell_command", { command: "npm test" })).toBe("npm test");
    expect(toolTarget("copilot", "bash", { command: "make" })).toBe("make");
    expect(toolTarget("runtime", "shell.exec", { command: "echo hi" })).toBe("echo hi");
    expect(toolTarget(undefined, "fs.write", { path: "/srv/a.txt", content: "x" })).toBe("/srv/a.txt");
    expect(toolTarget("copilot", "grep", { pattern: "x", paths: ["a.ts", "b.ts"] })).toBe("a.ts, b.ts");
    expect(toolTarget("claude-code", "WebFetch", { url: "https://x.test/a", prompt: "p" })).toBe(
      "https://x.test/a",
    );
  });

  it("is undefined for a tool without a command, path or URL", () => {
    expect(toolTarget("claude-code", "WebSearch", { query: "q" })).toBeUndefined();
    expect(toolTarget("claude-code", "mcp__github__create_issue", { title: "t" })).toBeUndefined();
    expect(toolTarget("runtime", "deploy", { command: "x" })).toBeUndefined();
    expect(toolTarget("claude-code", "Bash", { command: " \n " })).toBeUndefined();
  });

  it("masks secrets before it cuts, and stays within its bound", () => {
    const key = "sk-live-0123456789abcdefghijklmnop";
    const target = toolTarget("claude-code", "Bash", {
      command: `curl -H 'x: ${key}' --password=hunter2secret https://u:pw@h.test/`,
    });
    expect(target).toContain("[REDACTED]");
    for (const secret of [key, "hunter2secret", ":pw@"]) expect(target).not.toContain(secret);
    // A secret straddling the cut is masked whole, not left half-shown.
    const long = toolTarget("claude-code", "Bash", { command: `${"a".repeat(112)} ${key}` })!;
    expect([...long]).toHaveLength(TOOL_TARGET_CHARS);
    expect(long.endsWith("…")).toBe(true);
    expect(long).not.toContain("sk-liv");
    expect(toolTarget("claude-code", "Bash", { command: "x".repeat(5000) })).toHaveLength(TOOL_TARGET_CHARS);
  });

  it("reads a registered MCP tool's target from its arguments' common names, and its records carry its upstream", () => {
    const mcp = { server: "fs", tool: "write_file", annotations: { readOnlyHint: false } };
    const args = { path: "/srv/notes.txt", content: "x" };
    // Without its origin a registered name is a runtime tool the table does not know: no target.
    expect(toolTarget("runtime", "fs_write_file", args)).toBeUndefined();
    expect(toolTarget("runtime", "fs_write_file", args, mcp)).toBe("/srv/notes.txt");
    expect(toolCalledPayload("runtime", "fs_write_file", "mutation", args, "abc", mcp)).toEqual({
      tool_name: "fs_write_file",
      effect: "mutation",
      arguments_sha256: "abc",
      target: "/srv/notes.txt",
      mcp: { server: "fs", tool: "write_file" },
    });
    expect(toolRefusedPayload("runtime", "fs_write_file", args, "blocked", "no", mcp)).toMatchObject({
      status: "blocked",
      target: "/srv/notes.txt",
      mcp: { server: "fs", tool: "write_file" },
    });
    expect(toolCalledPayload("runtime", "echo", "read", { text: "hi" }, "abc")).not.toHaveProperty("mcp");
  });
});

describe("tool names from the wire that are Object.prototype names", () => {
  const names = Object.getOwnPropertyNames(Object.prototype);
  const owners = [...Object.keys(AGENT_TOOLS), undefined] as Array<keyof typeof AGENT_TOOLS | undefined>;

  it("are tools of kind `other`, never an inherited member", () => {
    for (const owner of owners)
      for (const name of names) {
        expect(toolKindOf(owner, name), `${owner} ${name}`).toEqual({ kind: "other" });
        expect(toolFacts(owner, name, { command: "rm -rf /" }), `${owner} ${name}`).toEqual({
          kind: "other",
        });
        expect(toolTarget(owner, name, { command: "rm -rf /" })).toBeUndefined();
      }
  });
});

describe("ownEntry", () => {
  it("reads a table's own rows only", () => {
    const table: Record<string, number> = { a: 1 };
    expect(ownEntry(table, "a")).toBe(1);
    for (const name of Object.getOwnPropertyNames(Object.prototype))
      expect(ownEntry(table, name)).toBeUndefined();
    expect(ownEntry(JSON.parse('{"__proto__": 2}') as Record<string, number>, "__proto__")).toBe(2);
  });
});
