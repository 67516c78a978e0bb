import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import { REPO_ROOT } from "@geode/testing";
import { describe, expect, it } from "vitest";

const run = promisify(execFile);
const DIR = path.join(REPO_ROOT, "infra/observability");

/** promtool, from Debian's `prometheus` package (.ci/run installs it). */
async function promtool(...args: string[]): Promise<string> {
  const { stdout, stderr } = await run("promtool", args, { cwd: DIR });
  return stdout + stderr;
}

describe("alert rules (infra/observability)", () => {
  it("pass promtool check rules", async () => {
    expect(await promtool("check", "rules", "alerts.yml")).toMatch(/SUCCESS: 9 rules found/);
  });

  it("pass their unit tests: each alert fires on what should fire it and not on its near miss", async () => {
    expect(await promtool("test", "rules", "alerts.test.yml")).toMatch(/SUCCESS/);
  });
});
