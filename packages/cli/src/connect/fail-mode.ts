import { commandFailMode } from "./hook-command.js";

/** What a guarded hook does when the gateway cannot answer or refuses the token. */
export type FailMode = "fail-closed" | "fail-open";

/** One guarded hook of an agent's configuration and what it does when the gateway fails. */
export interface HookMode {
  event: string;
  mode: FailMode;
}

/**
 * The line every `geode connect <agent> --write` ends its report with: which kind of hooks it wrote
 * and what that means when the plane is down or the token is wrong.
 */
export function wroteLine(options: {
  failClosed: boolean;
  count: number;
  agent: string;
  file: string;
  endpoint: string;
}): string {
  const { count, agent, file, endpoint } = options;
  return options.failClosed
    ? `wrote fail-closed hooks for ${count} ${agent} events to ${file} (gateway ${endpoint}): with the gateway down or the token refused, prompts and tool calls are refused (--fail-open to let them go on).\n`
    : `wrote fail-open hooks for ${count} ${agent} events to ${file} (gateway ${endpoint}): with the gateway down or the token refused, ${agent} goes on ungoverned.\n`;
}

/** The stderr line of a printed (not written) set of hooks, so stdout stays the agent's format. */
export const printedLine = (failClosed: boolean): string =>
  `geode: ${failClosed ? "fail-closed hooks (--fail-open to let calls go on when the gateway cannot answer)" : "fail-open hooks: with the gateway down or the token refused, the agent goes on ungoverned"}\n`;

/**
 * How `--check` reports the guarded hooks: one line per hook (`  PreToolUse  fail-closed`), after
 * a summary. An empty list reports nothing.
 */
export function modesReport(modes: readonly HookMode[]): string {
  if (modes.length === 0) return "";
  const open = modes.filter((m) => m.mode === "fail-open");
  const summary =
    open.length === 0
      ? "the guarded hooks fail closed (a call is refused while the gateway cannot answer):"
      : `${open.length} of ${modes.length} guarded hooks fail open (the call goes on, ungoverned, while the gateway cannot answer; geode connect without --fail-open writes fail-closed ones):`;
  const width = Math.max(...modes.map((m) => m.event.length));
  return `${summary}\n${modes.map((m) => `  ${m.event.padEnd(width)}  ${m.mode}\n`).join("")}`;
}

/**
 * The fail mode of each guarded event that has a hook of this CLI: `hooksOf(event)` gives the
 * event's hook entries as the agent's config holds them, `modeOf` reads one (null: not ours). An
 * event with one fail-open hook of ours is fail-open.
 */
export function guardedModes(
  events: ReadonlyArray<{ event: string; guards: boolean }>,
  hooksOf: (event: string) => readonly unknown[],
  modeOf: (hook: unknown) => FailMode | null = (h) =>
    commandFailMode((h as { command?: unknown } | null)?.command),
): HookMode[] {
  return events
    .filter((e) => e.guards)
    .flatMap((e) => {
      const modes = hooksOf(e.event).map(modeOf);
      if (modes.every((m) => m === null)) return [];
      return [{ event: e.event, mode: modes.includes("fail-open") ? "fail-open" : "fail-closed" } as const];
    });
}

/** The hook entries of `event` in a Claude Code-shaped `hooks` object (event → groups → hooks). */
export function nestedHooksOf(hooks: unknown, event: string): unknown[] {
  if (hooks === null || typeof hooks !== "object") return [];
  const groups = Object.hasOwn(hooks, event) ? (hooks as Record<string, unknown>)[event] : undefined;
  return (Array.isArray(groups) ? groups : []).flatMap((g: { hooks?: unknown }) =>
    Array.isArray(g?.hooks) ? (g.hooks as unknown[]) : [],
  );
}
