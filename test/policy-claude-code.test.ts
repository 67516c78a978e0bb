/**
 * The real Claude Code CLI governed by a shipped pack with no code written: `geode agents add`,
 * `geode policy add --pack destructive-shell`, `geode connect claude-code`, and Claude Code's
 * `rm -rf` never runs.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { type AgentGateway, startAgentGateway } from "@geode/agent-gateway";
import { runCliCaptured } from "@geode/cli/testing";
import type { HookDispatcher } from "@geode/hook-dispatcher";
import { useTestEnv, waitFor } from "@geode/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runClaude, scratch, startAnthropicStandIn } from "./claude-code-support.js";
import { startDispatcher } from "./hooks-support.js";
import { keptLogger, type RunningGuard, startGuard } from "./policy-support.js";

const env = useTestEnv();
const geode = (...argv: string[]) => runCliCaptured(argv, { ...process.env, ...env().env });
let dispatcher: HookDispatcher;
let gateway: AgentGateway;
let running: RunningGuard;
let settingsDir = "";

beforeAll(async () => {
  dispatcher = await startDispatcher(env());
  gateway = await startAgentGateway({
    nc: env().nc,
    names: env().names,
    config: { host: "127.0.0.1", port: 0 },
  });
  running = await startGuard(env(), keptLogger([]));
  settingsDir = mkdtempSync(path.join(tmpdir(), "geode-policy-cc-"));
}, 120_000);

afterAll(async () => {
  await running?.guard.stop();
  await gateway?.stop();
  await dispatcher?.stop();
  rmSync(settingsDir, { recursive: true, force: true });
});

describe("a pack guards a real Claude Code session", () => {
  it("geode policy add --pack destructive-shell: Claude Code's rm -rf is denied and never runs", {
    timeout: 240_000,
  }, async () => {
    const added = await geode("agents", "add", "laptop");
    expect(added.code, added.err).toBe(0);
    const token = added.out.trimEnd().split("\n").at(-1) as string;
    expect((await geode("policy", "add", "--pack", "destructive-shell")).code).toBe(0);
    await running.loaded(["destructive-shell"]);
    await waitFor(() => gateway.agents() === 1);
    const settings = path.join(settingsDir, "settings.json");
    expect((await geode("connect", "claude-code", "--url", gateway.url, "--write", settings)).code).toBe(0);

    const api = await startAnthropicStandIn([
      { tool: { name: "Bash", input: { command: "rm -r -f precious", description: "clean up" } } },
      { text: "Could not delete it." },
    ]);
    const dirs = scratch();
    try {
      mkdirSync(path.join(dirs.work, "precious"));
      writeFileSync(path.join(dirs.work, "precious", "data.txt"), "keep me");
      const run = await runClaude({
        prompt: "Clean up.",
        settingsFile: settings,
        apiUrl: api.url,
        home: dirs.home,
        cwd: dirs.work,
        token,
        args: ["--allowedTools", "Bash"],
      });
      expect(run.result, `claude exited ${run.code}: ${run.stderr.slice(-2000)}`).not.toBeNull();
      expect(existsSync(path.join(dirs.work, "precious", "data.txt"))).toBe(true);
      expect(run.result?.["permission_denials"]).toEqual([expect.objectContaining({ tool_name: "Bash" })]);
      expect(api.main()[1]?.raw).toContain("destructive-shell.rm-recursive-force");
    } finally {
      await api.close();
      dirs.cleanup();
    }
  });
});
