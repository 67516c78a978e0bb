/**
 * A guard never decides on less than what runs (DESIGN section 3): a destructive command behind
 * thousands of characters of padding, or behind many other arguments, is refused on every agent
 * endpoint and through the tool-executor exactly as the same command alone is; a call whose
 * command is too large for a guard to see is refused while a closed guard serves the hook; large
 * content that is not a guarded fact is never refused for its size; and `geode policy test`
 * agrees with `geode policy test --live`.
 */

import { runCliCaptured } from "@geode/cli/testing";
import {
  CLAUDE_CODE_HOOK_PATH,
  CODEX_HOOK_PATH,
  COPILOT_HOOK_PATH,
  GEMINI_CLI_HOOK_PATH,
  GUARDED_FACT_BYTES,
  GUARDED_INPUT_TOO_LARGE,
  HookName,
  QWEN_CODE_HOOK_PATH,
} from "@geode/contracts";
import { createHookClient } from "@geode/runtime";
import { waitFor } from "@geode/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ccInput, useGatewayFixture } from "./gateway-support.js";
import { keptLogger, putPack, putPolicy, type RunningGuard, startGuard } from "./policy-support.js";
import { recordingTool, startToolStack, type ToolStack } from "./tools-support.js";

const fx = useGatewayFixture({ approvalTimeoutMs: 1_500 });
const env = () => fx.env();
let running: RunningGuard | undefined;
let stack: ToolStack | undefined;
const shell = recordingTool("shell.exec", "mutation");

/**
 * A person is asked before `wipe-all` runs, and PermissionRequest refuses it: the refusal can come
 * only from the command, which PermissionRequest's payload (a bounded `detail`) does not carry.
 */
const PERMISSION_POLICY = `@id("ask-wipe")
@ask
@reason("wiping needs a person")
forbid (principal, action == Geode::Action::"call_tool", resource)
when { context.hook == "PreToolUse" && context has command && context.command like "*wipe-all*" };

@id("no-wipe-on-permission")
@reason("no wiping, asked or not")
forbid (principal, action == Geode::Action::"call_tool", resource)
when { context.hook == "PermissionRequest" && context has command && context.command like "*wipe-all*" };`;

beforeAll(async () => {
  running = await startGuard(env(), keptLogger([]));
  await putPack(env(), "destructive-shell");
  await putPolicy(env(), "permission-rm", PERMISSION_POLICY);
  await running.loaded(["destructive-shell", "permission-rm"]);
  stack = await startToolStack(env(), { tools: [shell] });
  await waitFor(() => stack?.dispatcher.handlers().filter((h) => h.name === "policy").length === 4);
}, 60_000);

afterAll(async () => {
  await stack?.stop();
  await running?.guard.stop();
});

/** `rm -rf` of a folder after `pad` characters of harmless text. */
const paddedRm = (pad: number) => `echo ${"x".repeat(pad)}; rm -rf precious`;
/** The same command as the last of `count` other arguments (sanitizing keeps 64 of an object's entries). */
const behindArguments = (command: string, count = 100): Record<string, unknown> => {
  const args: Record<string, unknown> = {};
  for (let i = 0; i < count; i++) args[`opt_${String(i).padStart(3, "0")}`] = i;
  args["command"] = command;
  return args;
};

const shapes: Array<[string, (command: string) => Record<string, unknown>]> = [
  ["short", (command) => ({ command })],
  ["padded", () => ({ command: paddedRm(6_000) })],
  ["behind 100 other arguments", (command) => behindArguments(command)],
];

/** Each agent endpoint's PreToolUse for a shell command, and how its refusal reads. */
const endpoints: Array<{
  agent: string;
  path: string;
  body: (args: Record<string, unknown>) => unknown;
  denied: (reply: unknown) => boolean;
}> = [
  {
    agent: "claude-code",
    path: CLAUDE_CODE_HOOK_PATH,
    body: (args) =>
      ccInput("PreToolUse", { tool_name: "Bash", tool_input: args, tool_use_id: `t-${Math.random()}` }),
    denied: (r) =>
      (r as { hookSpecificOutput?: { permissionDecision?: string } }).hookSpecificOutput
        ?.permissionDecision === "deny",
  },
  {
    agent: "codex",
    path: CODEX_HOOK_PATH,
    body: (args) => ({
      ...ccInput("PreToolUse", { tool_name: "Bash", tool_input: args, tool_use_id: `t-${Math.random()}` }),
      turn_id: "turn-1",
      model: "gpt-5-codex",
      permission_mode: "bypassPermissions",
    }),
    denied: (r) =>
      (r as { hookSpecificOutput?: { permissionDecision?: string } }).hookSpecificOutput
        ?.permissionDecision === "deny",
  },
  {
    agent: "gemini-cli",
    path: GEMINI_CLI_HOOK_PATH,
    body: (args) => ({
      session_id: `g-${Math.random()}`,
      cwd: "/tmp",
      hook_event_name: "BeforeTool",
      timestamp: new Date().toISOString(),
      tool_name: "run_shell_command",
      tool_input: args,
    }),
    denied: (r) => (r as { decision?: string }).decision === "deny",
  },
  {
    agent: "copilot",
    path: `${COPILOT_HOOK_PATH}?event=preToolUse`,
    body: (args) => ({
      sessionId: `c-${Math.random()}`,
      timestamp: Date.now(),
      cwd: "/tmp",
      toolName: "bash",
      toolArgs: args,
    }),
    denied: (r) => (r as { permissionDecision?: string }).permissionDecision === "deny",
  },
  {
    agent: "qwen-code",
    path: QWEN_CODE_HOOK_PATH,
    body: (args) => ({
      session_id: `q-${Math.random()}`,
      cwd: "/tmp",
      hook_event_name: "PreToolUse",
      permission_mode: "yolo",
      tool_name: "run_shell_command",
      tool_input: args,
      tool_use_id: `toolu_${Math.random()}`,
      tool_call_id: `call_${Math.random()}`,
    }),
    denied: (r) =>
      (r as { hookSpecificOutput?: { permissionDecision?: string } }).hookSpecificOutput
        ?.permissionDecision === "deny",
  },
];

describe("every agent endpoint decides on the whole command", () => {
  for (const endpoint of endpoints)
    it(`${endpoint.agent}: rm -rf is refused short, padded and behind other arguments; ls is not`, async () => {
      for (const [shape, args] of shapes) {
        const refused = await fx.post(endpoint.body(args("rm -rf precious")), { path: endpoint.path });
        expect(refused.status, shape).toBe(200);
        expect(endpoint.denied(refused.body), `${shape}: ${JSON.stringify(refused.body).slice(0, 300)}`).toBe(
          true,
        );
        expect(JSON.stringify(refused.body)).toContain("rm -rf");
        const allowed = await fx.post(endpoint.body(args("ls -la")), { path: endpoint.path });
        if (shape === "padded") continue; // the padded shape always ends in rm -rf
        expect(endpoint.denied(allowed.body), shape).toBe(false);
      }
    });

  it("a command too large for a guard to see is refused, with the documented reason", async () => {
    const huge = { command: `${"echo ok; ".repeat(GUARDED_FACT_BYTES / 8)}` };
    for (const endpoint of endpoints) {
      const reply = await fx.post(endpoint.body(huge), { path: endpoint.path });
      expect(endpoint.denied(reply.body), endpoint.agent).toBe(true);
      expect(JSON.stringify(reply.body)).toContain(GUARDED_INPUT_TOO_LARGE);
    }
  });

  it("large content that is not a guarded fact is never refused for its size", async () => {
    const content = "line of a large file\n".repeat(20_000);
    const reply = await fx.post(
      ccInput("PreToolUse", {
        tool_name: "Write",
        tool_input: { file_path: "notes.md", content },
        tool_use_id: "w-1",
      }),
    );
    expect(reply.body).not.toMatchObject({ hookSpecificOutput: { permissionDecision: "deny" } });
  });

  it("PermissionRequest sees the whole command too (its payload carries only a bounded detail)", async () => {
    const reply = await fx.post(
      ccInput("PermissionRequest", { tool_name: "Bash", tool_input: behindArguments("wipe-all precious") }),
    );
    expect(reply.body).toMatchObject({ hookSpecificOutput: { decision: { behavior: "deny" } } });
    expect(JSON.stringify(reply.body)).toContain("no wiping, asked or not");
  });
});

describe("the tool-executor decides on the whole command", () => {
  const execute = (tool: string, args: Record<string, unknown>) =>
    runCliCaptured(["tool", "call", tool, "--args", JSON.stringify(args), "--json"], {
      ...process.env,
      ...env().env,
    });

  it("refuses a padded rm -rf and one behind other arguments at PreToolUse; runs neither", async () => {
    for (const [shape, args] of shapes) {
      const out = await execute("shell.exec", args("rm -rf precious"));
      expect(JSON.parse(out.out), shape).toMatchObject({ status: "blocked", executed: false });
    }
    const huge = await execute("shell.exec", { command: "x".repeat(GUARDED_FACT_BYTES + 1) });
    expect(JSON.parse(huge.out)).toMatchObject({
      status: "blocked",
      reason: `policy: ${GUARDED_INPUT_TOO_LARGE}`,
    });
    expect(shell.calls).toEqual([]);
    expect(JSON.parse((await execute("shell.exec", { command: "ls" })).out)).toMatchObject({
      status: "completed",
    });
    expect(shell.calls).toHaveLength(1);
  });

  it("denies at PermissionRequest with the whole command", async () => {
    const calls = shell.calls.length;
    const out = await execute("shell.exec", { command: `echo ${"x".repeat(5_000)}; wipe-all precious` });
    expect(JSON.parse(out.out)).toMatchObject({
      status: "denied",
      reason: expect.stringContaining("asked or not"),
    });
    expect(shell.calls).toHaveLength(calls);
  });
});

describe("geode policy test agrees with the running guard", () => {
  const geode = (...argv: string[]) => runCliCaptured(argv, { ...process.env, ...env().env });
  const cases: Array<[string, Record<string, unknown>, boolean]> = [
    ["short", { command: "rm -rf precious" }, true],
    ["padded", { command: paddedRm(6_000) }, true],
    ["behind other arguments", behindArguments("rm -rf precious"), true],
    ["too large", { command: "x".repeat(GUARDED_FACT_BYTES + 1) }, true],
    ["harmless", behindArguments("ls -la"), false],
  ];
  for (const [shape, args, blocked] of cases)
    it(`${shape}: local and --live give the same decision`, async () => {
      const payload = JSON.stringify({ tool_name: "Bash", arguments: args });
      const local = await geode("policy", "test", "--hook", "PreToolUse", "--payload", payload, "--json");
      const live = await geode(
        "policy",
        "test",
        "--live",
        "--hook",
        "PreToolUse",
        "--payload",
        payload,
        "--json",
      );
      expect(local.code, local.err).toBe(blocked ? 3 : 0);
      expect(live.code, live.err).toBe(local.code);
      const [l, r] = [JSON.parse(local.out), JSON.parse(live.out)];
      expect(r.blocked).toBe(l.blocked);
      expect(r.decision).toBe(l.decision);
    });

  it("the outcome of a hook call names the guard's reason for a call too large to see", async () => {
    const outcome = await createHookClient(env().nc, env().names).invoke(HookName.PreToolUse, {
      tool_name: "Bash",
      arguments: { command: "y".repeat(GUARDED_FACT_BYTES + 5) },
    });
    expect(outcome.blocked).toBe(true);
    expect(outcome.decisions).toEqual([
      { handler: "policy", action: "block", reason: GUARDED_INPUT_TOO_LARGE },
    ]);
  });
});
