import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import {
  REPO_ROOT,
  type SpawnedProcess,
  spawnProgram,
  spawnService,
  useTestEnv,
  waitFor,
} from "@geode/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { packPackages } from "../scripts/pack-packages.js";

// README "Run your own handler", as written: the packages packed as npm would publish them,
// installed with plain npm into a folder outside the workspace, the handler and the tool run with
// plain node, and the installed `geode` (compiled JavaScript, no TypeScript tooling) tries them.

const env = useTestEnv();
const work = mkdtempSync(path.join(tmpdir(), "geode-own-handler-"));
const folder = path.join(work, "my-guard");
const procs: SpawnedProcess[] = [];

/** The README section between its heading and the next one. */
function readmeSection(): string {
  const text = readFileSync(path.join(REPO_ROOT, "README.md"), "utf8");
  const start = text.indexOf("## Run your own handler");
  expect(start).toBeGreaterThan(-1);
  const end = text.indexOf("\n## ", start + 1);
  return text.slice(start, end === -1 ? undefined : end);
}

/** The code block that follows the line naming `file` (e.g. "`guard.mjs`, a PreToolUse guard:"). */
function fileBlock(section: string, file: string): string {
  const m = new RegExp(`\`${file.replace(".", "\\.")}\`[^\\n]*\\n\\n\`\`\`js\\n([\\s\\S]*?)\`\`\``).exec(
    section,
  );
  if (!m?.[1]) throw new Error(`README has no js block for ${file}`);
  return m[1];
}

/** The `npx geode …` lines of the section's last sh block, in order. */
function geodeCommands(section: string): string[] {
  const blocks = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1] ?? "");
  return (blocks.at(-1) ?? "")
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l.startsWith("npx geode "));
}

function sh(command: string, extraEnv: Record<string, string> = {}) {
  return spawnSync("sh", ["-c", command], {
    cwd: folder,
    env: { ...process.env, ...env().env, ...extraEnv },
    encoding: "utf8",
    timeout: 300_000,
  });
}

beforeAll(async () => {
  const serviceEnv = { ...env().env, LOG_LEVEL: "info" };
  for (const service of ["hook-dispatcher", "tool-executor", "activity-recorder"]) {
    const p = spawnService(`services/${service}/src/main.ts`, serviceEnv);
    procs.push(p);
    await p.waitForOutput(new RegExp(`${service} started`));
  }
}, 240_000);

afterAll(async () => {
  for (const p of procs.reverse()) await p.stop("SIGTERM");
  rmSync(work, { recursive: true, force: true });
});

describe("README: run your own handler, from a folder outside the repository", () => {
  it("installs the packed packages with npm, runs a handler and a tool with node, and the installed geode sees them", async () => {
    const packed = packPackages(path.join(work, "packages"));
    expect(packed.map((p) => p.name)).toEqual(
      expect.arrayContaining(["@geode/contracts", "@geode/sdk", "@geode/cli"]),
    );
    const section = readmeSection();

    // The README's set-up, with the tarballs standing in for the registry (as the README says).
    mkdirSync(folder, { recursive: true });
    const init = sh("npm init -y >/dev/null && npm pkg set type=module");
    expect(init.status, init.stderr).toBe(0);
    const install = sh(
      `npm install --no-audit --no-fund --prefer-offline ${packed.map((p) => p.file).join(" ")}`,
    );
    expect(install.status, install.stderr).toBe(0);
    // Every dependency supports the Node the README asks for: npm has no engine to warn about.
    expect(install.stderr).not.toMatch(/EBADENGINE/);
    expect(install.stdout).not.toMatch(/EBADENGINE/);
    // Nothing of the workspace is reachable from here: no tsx, no TypeScript sources.
    expect(sh("node -e \"import('tsx').then(() => process.exit(1), () => process.exit(0))\"").status).toBe(0);

    for (const file of ["guard.mjs", "word-count.mjs"]) {
      writeFileSync(path.join(folder, file), fileBlock(section, file));
      const p = spawnProgram("node", [file], env().env, { cwd: folder });
      procs.push(p);
      await p.waitForOutput(/ ready/);
    }

    const [invoke, call, audit, ...rest] = geodeCommands(section);
    expect(rest).toEqual([]);
    const blocked = sh(invoke ?? "");
    expect(blocked.status, blocked.stderr).toBe(3);
    expect(blocked.stdout).toMatch(/PreToolUse \(session try-1\): blocked/);
    expect(blocked.stdout).toMatch(/no-rm\s+block\s+no recursive deletes/);

    const counted = sh(call ?? "");
    expect(counted.status, counted.stderr).toBe(0);
    expect(counted.stdout).toMatch(/word-count: completed/);
    expect(counted.stdout).toContain('{"words":3}');

    // The recorder projects the audit events shortly after: wait for the guard's two calls.
    let table = "";
    await waitFor(() => {
      const r = sh(audit ?? "");
      table = r.stdout;
      return r.status === 0 && (table.match(/no-rm/g) ?? []).length >= 2;
    }, 60_000);
    // The agent column reads `-`: this session was started by `geode hook invoke`, not by an agent.
    expect(table).toMatch(/try-1\s+-\s+hook\s+PreToolUse\s+no-rm\s+block/);
    expect(table).toMatch(/try-1\s+-\s+hook\s+PreToolUse\s+no-rm\s+ok/);
  }, 600_000);
});
