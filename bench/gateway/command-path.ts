/**
 * The command path of the agents whose hooks are commands (Codex CLI, Gemini CLI, Copilot CLI, and
 * Qwen Code's fail-closed hooks):
 * one hook call as the agent makes it, a shell running the command `geode connect` writes with
 * the hook input on stdin, through the gateway and the plane and back, against a do-nothing command
 * hook (`cat >/dev/null; echo {}`), each call a fresh process, interleaved.
 */
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { runCliCaptured } from "@geode/cli/testing";
import { parse } from "smol-toml";
import { fmtUs, type LatencySummary, measureInterleaved, progress, summarize, table } from "../lib/stats.js";

/** One agent's hook call: the PreToolUse command `geode connect` writes for it, and its input as it sends it. */
export interface CommandPathCase {
  agent: string;
  /** The agent's event measured (its name for PreToolUse). */
  event: string;
  /** The PreToolUse hook command connect writes for a gateway at `base`. */
  command(base: string): Promise<string>;
  input: string;
}

const DO_NOTHING = "cat >/dev/null; echo {}";
const COMMAND_PATH_TARGET_MS = 30;

/** Runs `sh -c command` with `input` on stdin; resolves once it exited 0 and its output closed. */
function run(command: string, input: string, env: NodeJS.ProcessEnv): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn("sh", ["-c", command], { env, stdio: ["pipe", "pipe", "pipe"] });
    let err = "";
    child.stdout.resume();
    child.stderr.on("data", (c: Buffer) => (err += c.toString("utf8")));
    child.once("error", reject);
    child.once("close", (code) => (code === 0 ? resolve() : reject(new Error(`exit ${code}: ${err}`))));
    child.stdin.end(input);
  });
}

/** A Codex CLI PreToolUse input (Codex 0.171's hook schema). */
export const CODEX_CASE: CommandPathCase = {
  agent: "Codex CLI",
  event: "PreToolUse",
  async command(base) {
    const r = await runCliCaptured(["connect", "codex", "--url", base, "--fail-closed"], process.env);
    if (r.code !== 0) throw new Error(`geode connect codex: ${r.err}`);
    const hooks = (parse(r.out) as { hooks: Record<string, Array<{ hooks: Array<{ command: string }> }>> })
      .hooks;
    return hooks["PreToolUse"]?.[0]?.hooks[0]?.command as string;
  },
  input: JSON.stringify({
    session_id: randomUUID(),
    turn_id: randomUUID(),
    transcript_path: null,
    cwd: "/home/dev/src/parser",
    hook_event_name: "PreToolUse",
    model: "gpt-5-codex",
    permission_mode: "bypassPermissions",
    tool_name: "Bash",
    tool_input: { command: "npm test -- --runInBand src/parser" },
    tool_use_id: "call_bench_1",
  }),
};

/** A Gemini CLI BeforeTool input (Gemini CLI 0.61.0's hook input), through the command `geode connect gemini-cli` writes. */
export const GEMINI_CASE: CommandPathCase = {
  agent: "Gemini CLI",
  event: "BeforeTool",
  async command(base) {
    const r = await runCliCaptured(["connect", "gemini-cli", "--url", base, "--fail-closed"], process.env);
    if (r.code !== 0) throw new Error(`geode connect gemini-cli: ${r.err}`);
    const hooks = (
      JSON.parse(r.out) as { hooks: Record<string, Array<{ hooks: Array<{ command: string }> }>> }
    ).hooks;
    return hooks["BeforeTool"]?.[0]?.hooks[0]?.command as string;
  },
  input: JSON.stringify({
    session_id: randomUUID(),
    transcript_path: "/home/dev/.gemini/tmp/parser/chats/session.jsonl",
    cwd: "/home/dev/src/parser",
    hook_event_name: "BeforeTool",
    timestamp: new Date().toISOString(),
    tool_name: "run_shell_command",
    tool_input: { command: "npm test -- --runInBand src/parser", description: "runs the parser tests" },
  }),
};

/** A Copilot CLI preToolUse input (native, as Copilot 1.0.102 sends it; the event is in the hook's URL). */
export const COPILOT_CASE: CommandPathCase = {
  agent: "Copilot CLI",
  event: "preToolUse",
  async command(base) {
    const r = await runCliCaptured(
      ["connect", "copilot", "--url", base, "--fail-closed", "--print"],
      process.env,
    );
    if (r.code !== 0) throw new Error(`geode connect copilot: ${r.err}`);
    return (JSON.parse(r.out) as { hooks: Record<string, Array<{ bash: string }>> }).hooks["preToolUse"]?.[0]
      ?.bash as string;
  },
  input: JSON.stringify({
    sessionId: randomUUID(),
    timestamp: Date.now(),
    cwd: "/home/dev/src/parser",
    toolName: "bash",
    toolArgs: {
      command: "npm test -- --runInBand src/parser",
      description: "Run the parser tests",
      mode: "sync",
      initial_wait: 30,
    },
  }),
};

/** A Qwen Code PreToolUse input (as Qwen Code 0.24.4 sends it), through the fail-closed command `geode connect qwen-code` writes. */
export const QWEN_CASE: CommandPathCase = {
  agent: "Qwen Code",
  event: "PreToolUse",
  async command(base) {
    const r = await runCliCaptured(["connect", "qwen-code", "--url", base], process.env);
    if (r.code !== 0) throw new Error(`geode connect qwen-code: ${r.err}`);
    const hooks = (
      JSON.parse(r.out) as { hooks: Record<string, Array<{ hooks: Array<{ command: string }> }>> }
    ).hooks;
    return hooks["PreToolUse"]?.[0]?.hooks[0]?.command as string;
  },
  input: qwenPreToolUse(randomUUID()),
};

/** A Qwen Code PreToolUse input of session `sessionId` (its `tool_use_id` and the model's `tool_call_id`). */
export function qwenPreToolUse(sessionId: string): string {
  return JSON.stringify({
    session_id: sessionId,
    transcript_path: `/home/dev/.qwen/projects/-home-dev-src-parser/chats/${sessionId}.jsonl`,
    cwd: "/home/dev/src/parser",
    hook_event_name: "PreToolUse",
    timestamp: new Date().toISOString(),
    permission_mode: "yolo",
    prompt_id: `${sessionId}########0`,
    tool_name: "run_shell_command",
    tool_input: { command: "npm test -- --runInBand src/parser" },
    tool_use_id: "toolu_1796408416260_bench",
    tool_call_id: "call_bench_1",
  });
}

/**
 * Measures each agent's command path against the do-nothing command hook, interleaved; returns
 * the lines to print and whether every agent met the target at the median.
 */
export async function measureCommandPaths(
  gatewayBase: string,
  token: string,
  cases: readonly CommandPathCase[],
  rounds: number,
): Promise<{ text: string; met: boolean }> {
  const env = { PATH: process.env["PATH"] ?? "/usr/bin:/bin", GEODE_AGENT_TOKEN: token };
  const commands = await Promise.all(cases.map((c) => c.command(gatewayBase)));
  const fns = [
    () => run(DO_NOTHING, cases[0]?.input ?? "{}", env),
    ...cases.map((c, i) => () => run(commands[i] as string, c.input, env)),
  ];
  progress("command path warm-up");
  for (const fn of fns) for (let i = 0; i < 20; i++) await fn();
  progress(`command path: ${rounds} rounds of 5 calls per case`);
  const summaries: LatencySummary[] = (await measureInterleaved(fns, rounds, 5)).map(summarize);
  const floor = summaries[0] as LatencySummary;
  const rows = [
    ["do-nothing command hook (cat >/dev/null; echo {})", fmtUs(floor.medianUs), fmtUs(floor.p99Us), ""],
  ];
  let met = true;
  cases.forEach((c, i) => {
    const s = summaries[i + 1] as LatencySummary;
    const added = (s.medianUs - floor.medianUs) / 1000;
    met &&= added <= COMMAND_PATH_TARGET_MS;
    rows.push([
      `${c.agent}: the command connect writes, ${c.event}`,
      fmtUs(s.medianUs),
      fmtUs(s.p99Us),
      `+${added.toFixed(1)} ms`,
    ]);
  });
  const verdict = `command path, added per hook call at the median (target ≤ ${COMMAND_PATH_TARGET_MS} ms for each agent): ${met ? "met" : "not met"}`;
  return { text: `${table(["command hook", "median", "p99", "added"], rows)}\n${verdict}\n`, met };
}
