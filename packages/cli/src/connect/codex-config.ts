import { CODEX_EVENTS } from "@geode/contracts";
import { parse } from "smol-toml";
import { agentHookCommand, hookTimeoutSeconds } from "./hook-command.js";

/** The lines around what `geode connect codex` writes into a Codex config: a second run replaces them. */
export const BLOCK_BEGIN =
  "# >>> geode connect codex: the agent gateway's hooks (rewritten by geode; edit outside)";
const BLOCK_END = "# <<< geode connect codex";

/** Codex hook events whose timeout it clamps to 3 s (it warns about a longer one). */
const SHORT_EVENTS: ReadonlySet<string> = new Set(["SessionEnd", "Interrupt"]);

export interface CodexHooksOptions {
  /** The gateway's Codex endpoint (`…/v1/codex/hook`). */
  endpoint: string;
  /** The approval timeout the gateway waits for a human (the tool hooks must wait longer). */
  approvalTimeoutMs: number;
  /** Guarded events (prompts, tool calls, permission prompts) refuse when the gateway cannot answer. */
  failClosed: boolean;
}

/** A TOML basic string. */
const tomlString = (s: string) => JSON.stringify(s);

/** One hook of one event as Codex reads it: its command and timeout. */
export interface CodexHook {
  event: string;
  command: string;
  timeout: number;
}

/** The hook every mapped Codex event gets: the gateway's command, fail-closed where it guards. */
export function codexHooks(options: CodexHooksOptions): CodexHook[] {
  return CODEX_EVENTS.map((e) => {
    const timeout = SHORT_EVENTS.has(e.event)
      ? 3
      : hookTimeoutSeconds(
          e.event === "Stop" ? "stop" : e.tool ? "tool" : "other",
          options.approvalTimeoutMs,
        );
    const command = agentHookCommand(options.endpoint, options.failClosed && e.guards, timeout);
    return { event: e.event, command, timeout };
  });
}

/** `[[hooks.<Event>]]` tables, as Codex reads them (a matcher on the tool events). */
export function hooksToml(hooks: readonly CodexHook[]): string {
  const tool = new Set<string>(CODEX_EVENTS.filter((e) => e.tool).map((e) => e.event));
  return hooks
    .map((h) =>
      [
        `[[hooks.${h.event}]]`,
        ...(tool.has(h.event) ? ['matcher = "*"'] : []),
        `[[hooks.${h.event}.hooks]]`,
        'type = "command"',
        `command = ${tomlString(h.command)}`,
        `timeout = ${h.timeout}`,
        "",
      ].join("\n"),
    )
    .join("\n");
}

/** Trust records for hooks, the way Codex records them (`[hooks.state."<key>"] trusted_hash`). */
export function trustToml(trusted: ReadonlyArray<{ key: string; hash: string }>): string {
  return trusted
    .map((t) => `[hooks.state.${tomlString(t.key)}]\ntrusted_hash = ${tomlString(t.hash)}\n`)
    .join("\n");
}

/** The file without the block `geode connect codex` wrote into it before. */
function withoutBlock(text: string): string {
  const begin = text.indexOf(BLOCK_BEGIN);
  if (begin < 0) return text;
  const end = text.indexOf(BLOCK_END, begin);
  const after = end < 0 ? "" : text.slice(end + BLOCK_END.length).replace(/^\n/, "");
  return `${text.slice(0, begin).replace(/\n*$/, "")}\n${after}`.replace(/^\n/, "");
}

/**
 * The config with `body` as the block `geode connect codex` owns (a previous block replaced, the
 * rest kept as it was, comments included). Throws with Codex's own reading when the result would
 * not be valid TOML: Codex drops a config it cannot read ("using defaults"), so nothing is written.
 */
export function mergeCodexConfig(current: string, body: string): string {
  const rest = withoutBlock(current).replace(/\n*$/, "");
  const merged = `${rest === "" ? "" : `${rest}\n\n`}${BLOCK_BEGIN}\n${body.replace(/\n*$/, "")}\n${BLOCK_END}\n`;
  parse(merged);
  return merged;
}

/** Keys of `hooks.state` the file defines outside the block (a second trust record for one would be invalid TOML). */
export function trustKeysOutsideBlock(text: string): Set<string> {
  const parsed = parse(withoutBlock(text)) as { hooks?: { state?: Record<string, unknown> } };
  return new Set(Object.keys(parsed.hooks?.state ?? {}));
}
