import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { runCliCaptured } from "./capture-io.js";
import { COMMANDS } from "./commands/index.js";

describe("geode's command table", () => {
  it("loads a module with run() for every command, and no two commands share a path", async () => {
    const paths = COMMANDS.map((c) => c.path.join(" "));
    expect(new Set(paths).size).toBe(paths.length);
    for (const c of COMMANDS) {
      const module = await c.load();
      expect(typeof module.run, c.path.join(" ")).toBe("function");
      expect(c.usage.startsWith(`geode ${c.path.join(" ")}`), c.usage).toBe(true);
    }
  });
});

describe("geode help and version", () => {
  it("prints the package version for --version, -V and version", async () => {
    const { version } = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as {
      version: string;
    };
    for (const flag of ["--version", "-V", "version"]) {
      const r = await runCliCaptured([flag]);
      expect(r).toMatchObject({ code: 0, out: `geode ${version}\n` });
    }
  });

  it("shows a group's commands for the group alone (exit 0) and for a sub-command it lacks (exit 2)", async () => {
    const group = await runCliCaptured(["receipts"]);
    expect(group.code).toBe(0);
    expect(group.out).toMatch(/^Usage: geode receipts <command>/);
    expect(group.out).toMatch(/receipts ls\s/);
    expect(group.out).toMatch(/receipts resolve\s/);
    expect(group.out).not.toMatch(/handlers ls/);

    const unknown = await runCliCaptured(["events", "follow"]);
    expect(unknown.code).toBe(2);
    expect(unknown.err).toMatch(/^unknown command: geode events follow\n/);
    expect(unknown.err).toMatch(/events tail\s/);
    expect(unknown.err).not.toMatch(/receipts ls/);

    const none = await runCliCaptured(["frobnicate"]);
    expect(none.code).toBe(2);
    expect(none.err).toMatch(/unknown command: frobnicate/);
    expect(none.err).toMatch(/receipts ls/); // the whole help
  });

  it("prints one command's usage for --help without running it", async () => {
    const r = await runCliCaptured(["hook", "invoke", "--help"]);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/Usage: geode hook invoke <HookName> --payload/);
  });
});
