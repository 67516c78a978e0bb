import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import {
  CLAUDE_CODE_EVENTS,
  CODEX_EVENTS,
  COPILOT_EVENTS,
  GEMINI_CLI_EVENTS,
  OPENCODE_EVENTS,
  QWEN_CODE_EVENTS,
} from "@geode/contracts";
import { REPO_ROOT } from "@geode/testing";
import { describe, expect, it } from "vitest";

const read = (file: string) => readFileSync(path.join(REPO_ROOT, file), "utf8");
const guide = read("docs/claude-code.md");

/** The rows of a guide's mapping table (the one headed `| <agent> event |`): event → its cells. */
function mappingRows(text: string, header: string): Map<string, string[]> {
  const start = text.indexOf(header);
  const rows = new Map<string, string[]>();
  for (const line of text.slice(start).split("\n").slice(2)) {
    if (!line.startsWith("|")) break;
    const cells = line.split(" | ").map((c) => c.replace(/^\| |\s*\|$/g, "").trim());
    rows.set((cells[0] ?? "").replaceAll("`", ""), cells);
  }
  return rows;
}

/** Each agent's guide has one row per event its adapter maps, in the contract's order, with its guarded flag. */
const GUIDES = [
  { file: "docs/claude-code.md", header: "| Claude Code event |", events: CLAUDE_CODE_EVENTS },
  { file: "docs/codex.md", header: "| Codex event |", events: CODEX_EVENTS },
  { file: "docs/gemini-cli.md", header: "| Gemini CLI event |", events: GEMINI_CLI_EVENTS },
  { file: "docs/copilot.md", header: "| Copilot event |", events: COPILOT_EVENTS },
  { file: "docs/qwen-code.md", header: "| Qwen Code event |", events: QWEN_CODE_EVENTS },
  { file: "docs/opencode.md", header: "| opencode event |", events: OPENCODE_EVENTS },
] as const;

describe.each(GUIDES)("$file", ({ file, header, events }) => {
  it("has one mapping row per event the gateway maps, in the contract's order, with its guarded flag", () => {
    const rows = mappingRows(read(file), header);
    expect([...rows.keys()]).toEqual(events.map((e) => e.event));
    for (const e of events) {
      const cells = rows.get(e.event) ?? [];
      expect(cells.at(-1), e.event).toBe(e.guards ? "yes" : "no");
      if (e.plane !== null && e.plane !== "verifier") expect(cells[1], e.event).toContain(`\`${e.plane}\``);
    }
  });
});

describe("docs/codex.md", () => {
  it("names the three commands from nothing to a guarded session, and --check", () => {
    for (const command of [
      "geode up",
      "geode agents add",
      "geode connect codex --write",
      "geode connect codex --check",
    ])
      expect(read("docs/codex.md")).toContain(command);
  });
});

describe("docs/qwen-code.md", () => {
  it("names the three commands from nothing to a guarded session, --check, and the flags that turn hooks off", () => {
    for (const text of [
      "geode up",
      "geode agents add",
      "geode connect qwen-code --write",
      "geode connect qwen-code --check",
      "geode connect qwen-code --mcp --check",
      "pnpm exec qwen",
      "--bare",
      "--safe-mode",
      "disableAllHooks",
    ])
      expect(read("docs/qwen-code.md")).toContain(text);
  });
});

describe("docs/opencode.md", () => {
  it("names the three commands from nothing to a guarded session, --check, and the flag that turns plugins off", () => {
    for (const text of [
      "geode up",
      "geode agents add",
      "geode connect opencode",
      "geode connect opencode --check",
      "geode connect opencode --mcp --check",
      "pnpm exec opencode",
      "--pure",
    ])
      expect(read("docs/opencode.md")).toContain(text);
  });
});

describe("docs/gemini-cli.md", () => {
  it("names the three commands from nothing to a guarded session, and --check", () => {
    for (const command of [
      "geode up",
      "geode agents add",
      "geode connect gemini-cli --write",
      "geode connect gemini-cli --check",
    ])
      expect(read("docs/gemini-cli.md")).toContain(command);
  });

  it("says which events connect does not write, as the contract has them", () => {
    const rows = mappingRows(read("docs/gemini-cli.md"), "| Gemini CLI event |");
    for (const e of GEMINI_CLI_EVENTS)
      expect(rows.get(e.event)?.[1]?.includes("not written by connect"), e.event).toBe(!e.connect);
  });
});

describe("docs/claude-code.md", () => {
  it("names the three commands from nothing to a guarded session", () => {
    for (const command of ["geode up", "geode agents add", "geode connect claude-code --write"])
      expect(guide).toContain(command);
  });

  it("runs the pinned Claude Code from node_modules/.bin/claude, as its headless section says", () => {
    const pinned = (
      JSON.parse(readFileSync(path.join(REPO_ROOT, "package.json"), "utf8")) as {
        devDependencies: Record<string, string>;
      }
    ).devDependencies["@anthropic-ai/claude-code"];
    expect(guide).toContain(`pnpm exec claude --version      # ${pinned} (Claude Code)`);
    expect(guide).toMatch(/pnpm exec claude -p "[^"]+" \\\n\s+--settings \S+ --output-format json/);
    const run = spawnSync(path.join(REPO_ROOT, "node_modules/.bin/claude"), ["--version"], {
      encoding: "utf8",
      env: {
        PATH: process.env["PATH"] ?? "/usr/bin:/bin",
        HOME: tmpdir(),
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      },
      timeout: 60_000,
    });
    expect(run.stderr).not.toMatch(/native binary not installed/);
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout.trim()).toBe(`${pinned} (Claude Code)`);
  }, 90_000);
});

describe("docs/copilot.md", () => {
  it("names the three commands from nothing to a guarded session, and --check", () => {
    for (const command of [
      "geode up",
      "geode agents add",
      "geode connect copilot",
      "geode connect copilot --check",
    ])
      expect(read("docs/copilot.md")).toContain(command);
  });
});

/** Runs a pinned agent CLI from node_modules/.bin with a scratch HOME; its stdout and stderr. */
function pinnedCli(bin: string, args: string[]): string {
  const run = spawnSync(path.join(REPO_ROOT, "node_modules/.bin", bin), args, {
    encoding: "utf8",
    env: {
      PATH: process.env["PATH"] ?? "/usr/bin:/bin",
      HOME: tmpdir(),
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      NO_COLOR: "1",
    },
    timeout: 60_000,
  });
  expect(run.status, run.stderr).toBe(0);
  return `${run.stdout}${run.stderr}`;
}

/**
 * Each guide's quickstart: fail-closed by default, `--fail-open` to opt out, the pinned CLI run with
 * `pnpm exec`, and the flags it names as turning the agent's hooks off, as the pinned CLI's own
 * help has them (Copilot CLI and Gemini CLI have none: their guides say so).
 */
const QUICKSTARTS = [
  { file: "docs/claude-code.md", bin: "claude", offFlags: { "--help": ["--bare", "--safe-mode"] } },
  {
    file: "docs/codex.md",
    bin: "codex",
    offFlags: { "--help": ["--disable <FEATURE>"], "features list": ["hooks"] },
  },
  { file: "docs/gemini-cli.md", bin: "gemini", offFlags: {} },
  { file: "docs/copilot.md", bin: "copilot", offFlags: {} },
  { file: "docs/qwen-code.md", bin: "qwen", offFlags: { "--help": ["--bare", "--safe-mode"] } },
] as const;

describe.each(QUICKSTARTS)("$file quickstart", ({ file, bin, offFlags }) => {
  it("says the hooks fail closed, how to opt out, how to run the pinned CLI and what turns hooks off", () => {
    const text = read(file);
    expect(text).toMatch(/The hooks connect writes are \*\*fail-closed\*\*/);
    expect(text).toContain("`--fail-open`");
    expect(text).toMatch(new RegExp(`pnpm\\s+exec\\s+${bin}`));
    expect(text).toMatch(
      /ungoverned, and since no\s+hook\s+call\s+reaches\s+the\s+plane, it\s+is\s+not\s+even\s+recorded/,
    );
    for (const [args, flags] of Object.entries(offFlags)) {
      const help = pinnedCli(bin, args.split(" "));
      for (const flag of flags) {
        expect(help, `${bin} ${args}`).toContain(flag);
        expect(text, file).toContain(flag.split(" ")[0] as string);
      }
    }
  }, 90_000);
});

describe("README.md", () => {
  it("has a two-command quickstart: install, build and demo in one; the tests in the other", () => {
    const block = read("README.md").split("## Quickstart")[1]?.split("```sh\n")[1]?.split("```")[0] ?? "";
    const commands = block
      .split("\n")
      .map((l) => l.replace(/#.*$/, "").trim())
      .filter((l) => l !== "");
    expect(commands).toEqual(["pnpm install && pnpm build && pnpm exec geode demo", "pnpm test"]);
  });

  it("names every service of the plane, the fail-closed default and the pinned agent CLIs", () => {
    const readme = read("README.md");
    const services = readdirSync(path.join(REPO_ROOT, "services"));
    expect(services.length).toBeGreaterThan(0);
    const intro = readme.split("## Quickstart")[0] ?? "";
    for (const s of services) expect(intro, s).toContain(`**${s}**`);
    expect(readme).toContain("**fail-closed**");
    for (const bin of ["claude", "codex", "gemini", "copilot", "qwen"])
      expect(readme).toMatch(new RegExp(`pnpm\\s+exec\\s+${bin}`));
  });
});
