/**
 * Runs the real opencode headless and fully offline: `opencode run --format json` with `HOME` a
 * temp folder whose `~/.config/opencode/opencode.json` names an OpenAI-compatible provider pointed
 * at a scripted Chat Completions stand-in on loopback. The gateway's plugin comes from
 * `geode connect opencode`, which also keeps opencode's start-up install off the network.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { REPO_ROOT } from "@geode/testing";
import { type AgentPlane, type AgentSessionOptions, connectAgent } from "./agent-plane-support.js";
import { type AgentProcess, jsonLines, runAgentProcess, scratchFolders } from "./agent-process-support.js";
import {
  type ChatCompletionsStandIn,
  type ChatTurn,
  startChatCompletionsStandIn,
} from "./chat-completions-stand-in.js";

/** The npm package's binary (its postinstall copied it from the platform package). */
const OPENCODE_BIN = path.join(REPO_ROOT, "node_modules/.bin/opencode");

/** The model opencode is told to use: provider `standin` of its config. */
const MODEL = "standin/gpt-4.1";

/** A turn that runs a shell command with opencode's `bash` tool. */
export const bashTurn = (command: string): ChatTurn => ({
  call: { name: "bash", arguments: { command, description: "run it" } },
});

/** The user config of an offline opencode: the stand-in as its only provider, every tool allowed. */
function writeOpencodeConfig(home: string, apiUrl: string): string {
  const dir = path.join(home, ".config", "opencode");
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, "opencode.json");
  const config = {
    $schema: "https://opencode.ai/config.json",
    autoupdate: false,
    share: "disabled",
    provider: {
      standin: {
        npm: "@ai-sdk/openai-compatible",
        name: "standin",
        options: { baseURL: `${apiUrl}/v1`, apiKey: "standin-not-a-real-key" },
        models: { "gpt-4.1": { name: "gpt-4.1" } },
      },
    },
    permission: { bash: "allow", edit: "allow", external_directory: "allow" },
  };
  writeFileSync(file, `${JSON.stringify(config, null, 2)}\n`);
  return file;
}

/** The environment of an offline opencode run. */
function opencodeEnv(home: string): Record<string, string> {
  return {
    PATH: process.env["PATH"] ?? "/usr/bin:/bin",
    HOME: home,
    OPENCODE_DISABLE_MODELS_FETCH: "1",
    OPENCODE_DISABLE_AUTOUPDATE: "1",
    OPENCODE_DISABLE_LSP_DOWNLOAD: "1",
    // Nothing may reach a registry: a start-up install that is not kept offline fails (slowly) here.
    npm_config_registry: "http://127.0.0.1:9/",
  };
}

/** Runs `opencode run --format json <prompt>` headless; kills it (and its children) after `timeoutMs`. */
export function runOpencode(options: {
  prompt: string;
  home: string;
  cwd: string;
  env?: Record<string, string>;
  args?: string[];
  timeoutMs?: number;
  /** `PROVIDER/MODEL` of its config (default: the stand-in's). */
  model?: string;
}): Promise<AgentProcess> {
  const args = [
    "run",
    "--format",
    "json",
    "-m",
    options.model ?? MODEL,
    ...(options.args ?? []),
    options.prompt,
  ];
  return runAgentProcess(OPENCODE_BIN, args, {
    cwd: options.cwd,
    env: { ...opencodeEnv(options.home), ...options.env },
    timeoutMs: options.timeoutMs,
  });
}

/** opencode's session id, from its JSON event lines. */
const opencodeSessionId = (run: AgentProcess): string =>
  String(jsonLines(run.stdout).find((l) => typeof l["sessionID"] === "string")?.["sessionID"] ?? "");

/** A scratch HOME with opencode's config (`config`) for the stand-in at `apiUrl`, and a working folder. */
export function opencodeScratch(apiUrl: string): ReturnType<typeof scratchFolders> & { config: string } {
  const dirs = scratchFolders("opencode");
  return { ...dirs, config: writeOpencodeConfig(dirs.home, apiUrl) };
}

/** {@link opencodeScratch}, removed after the test. */
export function opencodeScratchFor(plane: AgentPlane, apiUrl: string): { home: string; work: string } {
  const dirs = opencodeScratch(apiUrl);
  plane.cleanups.push(dirs.cleanup);
  return dirs;
}

/** One opencode session through the plane's gateway: the stand-in with `script`, the plugin from `geode connect opencode`. */
export async function opencodeSession(
  plane: AgentPlane,
  script: ChatTurn[],
  options: AgentSessionOptions & { write?: (work: string, home: string) => string; args?: string[] } = {},
): Promise<{
  run: AgentProcess;
  api: ChatCompletionsStandIn;
  work: string;
  home: string;
  sessionId: string;
}> {
  const api = await startChatCompletionsStandIn(script);
  plane.cleanups.push(() => api.close());
  const { home, work } = opencodeScratchFor(plane, api.url);
  await connectAgent(
    plane,
    "opencode",
    { url: options.url, write: options.write?.(work, home), flags: options.flags, cwd: work },
    { HOME: home },
  );
  options.prepare?.(work);
  const run = await runOpencode({
    prompt: options.prompt ?? "Do the task.",
    home,
    cwd: work,
    env: { GEODE_AGENT_TOKEN: options.token ?? plane.token() },
    ...(options.args ? { args: options.args } : {}),
  });
  return { run, api, work, home, sessionId: opencodeSessionId(run) };
}
