/**
 * The real Claude Code CLI governed by a shipped pack with no code written: `geode agents add`,
 * `geode policy add --pack destructive-shell`, `geode connect claude-code`, and Claude Code's
 * `rm -rf` never runs.
 */
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { runClaude, scratch, startAnthropicStandIn } from "./claude-code-support.js";
import { usePolicyPlane } from "./policy-support.js";

const plane = usePolicyPlane("laptop", ["destructive-shell"]);

describe("a pack guards a real Claude Code session", () => {
  it("geode policy add --pack destructive-shell: Claude Code's rm -rf is denied and never runs", {
    timeout: 240_000,
  }, async () => {
    const dirs = scratch();
    plane.cleanups.push(dirs.cleanup);
    const settings = path.join(dirs.home, "settings.json");
    const connected = await plane.geode([
      "connect",
      "claude-code",
      "--url",
      plane.gateway().url,
      "--write",
      settings,
    ]);
    expect(connected.code, connected.err).toBe(0);

    const api = await startAnthropicStandIn([
      { tool: { name: "Bash", input: { command: "rm -r -f precious", description: "clean up" } } },
      { tool: { name: "Bash", input: { command: "touch harmless.txt", description: "mark it" } } },
      { text: "Could not delete it." },
    ]);
    plane.cleanups.push(() => api.close());
    mkdirSync(path.join(dirs.work, "precious"));
    writeFileSync(path.join(dirs.work, "precious", "data.txt"), "keep me");
    const run = await runClaude({
      prompt: "Clean up.",
      settingsFile: settings,
      apiUrl: api.url,
      home: dirs.home,
      cwd: dirs.work,
      token: plane.token(),
      args: ["--allowedTools", "Bash"],
    });
    expect(run.result, `claude exited ${run.code}: ${run.stderr.slice(-2000)}`).not.toBeNull();
    expect(existsSync(path.join(dirs.work, "precious", "data.txt"))).toBe(true);
    expect(existsSync(path.join(dirs.work, "harmless.txt"))).toBe(true);
    expect(run.result?.["permission_denials"]).toEqual([expect.objectContaining({ tool_name: "Bash" })]);
    expect(api.main()[1]?.raw).toContain(
      "recursive forced deletion (rm -rf) is not allowed (policy destructive-shell.rm-recursive-force)",
    );
    await plane.expectPolicyAudit(String(run.result?.["session_id"]), "destructive-shell.rm-recursive-force");
  });
});
