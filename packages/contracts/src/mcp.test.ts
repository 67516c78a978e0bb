import { describe, expect, it } from "vitest";
import { McpServerRecordSchema, mcpToolEffect, mcpToolName } from "./mcp.js";
import { TOOL_NAME_PATTERN } from "./names.js";

const base = { created_at: 1, updated_by: "op" };
const glob = (g: string, n: string) => new RegExp(`^${g.replace(/\*/g, ".*")}$`).test(n);

describe("MCP server records", () => {
  it("take a stdio server with a command and an http server with a url", () => {
    expect(
      McpServerRecordSchema.safeParse({ ...base, name: "fs", transport: "stdio", command: "npx" }).success,
    ).toBe(true);
    expect(
      McpServerRecordSchema.safeParse({
        ...base,
        name: "gh",
        transport: "http",
        url: "https://mcp.example/mcp",
        headers: { Authorization: "$GH_TOKEN" },
      }).success,
    ).toBe(true);
  });

  it("refuse names, header values, transports and mixes an attacker shapes", () => {
    for (const bad of [
      { name: "Fs", transport: "stdio", command: "x" },
      { name: "constructor_", transport: "stdio", command: "x" },
      { name: "a".repeat(17), transport: "stdio", command: "x" },
      { name: "fs", transport: "stdio" },
      { name: "fs", transport: "stdio", command: "x", url: "http://127.0.0.1/" },
      { name: "gh", transport: "http", url: "file:///etc/passwd" },
      { name: "gh", transport: "http", url: "http://user:pw@127.0.0.1/" },
      {
        name: "gh",
        transport: "http",
        url: "http://127.0.0.1/",
        headers: { Authorization: "Bearer sk-live" },
      },
      { name: "gh", transport: "http", url: "http://127.0.0.1/", command: "x" },
      { name: "fs", transport: "stdio", command: "x", env: ["A=B"] },
      { name: "fs", transport: "stdio", command: "x", extra: true },
    ])
      expect(McpServerRecordSchema.safeParse({ ...base, ...bad }).success, JSON.stringify(bad)).toBe(false);
  });
});

describe("mcpToolName", () => {
  it("is {server}_{tool} when that is a tool name", () => {
    expect(mcpToolName("fs", "write_file")).toBe("fs_write_file");
  });

  it("cuts long or odd names to 64 characters ending in 8 hex of the full name's sha256", () => {
    const long = mcpToolName("fs", "x".repeat(100));
    const other = mcpToolName("fs", `${"x".repeat(99)}y`);
    expect(long).toHaveLength(64);
    expect(long).toMatch(/_[0-9a-f]{8}$/);
    expect(long).not.toBe(other);
    const odd = mcpToolName("fs", "read file/ü");
    expect(odd).toMatch(TOOL_NAME_PATTERN);
    expect(odd).not.toBe(mcpToolName("fs", "read_file__"));
  });
});

describe("mcpToolEffect", () => {
  it("takes the record's effects first, then readOnlyHint, then openWorldHint, else mutation", () => {
    expect(mcpToolEffect({ effects: { "read_*": "admin" } }, "read_x", { readOnlyHint: true }, glob)).toBe(
      "admin",
    );
    expect(mcpToolEffect({}, "read_x", { readOnlyHint: true }, glob)).toBe("read");
    expect(mcpToolEffect({}, "fetch", { openWorldHint: true }, glob)).toBe("communication");
    expect(mcpToolEffect({}, "fetch", { readOnlyHint: false }, glob)).toBe("mutation");
  });
});
