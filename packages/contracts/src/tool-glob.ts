/**
 * Tool-name globs (`fs.*`, `shell`, `mcp.?ithub.*`): `*` matches any run of characters (dots
 * included), `?` exactly one; everything else is literal. Used by handler `match` filters and tool
 * allow/deny lists.
 */
export type ToolGlob = (toolName: string) => boolean;

const cache = new Map<string, RegExp>();

function globRegExp(pattern: string): RegExp {
  let re = cache.get(pattern);
  if (!re) {
    const body = pattern
      .split("")
      .map((c) => (c === "*" ? ".*" : c === "?" ? "." : c.replace(/[.+^${}()|[\]\\]/g, "\\$&")))
      .join("");
    re = new RegExp(`^${body}$`, "s");
    if (cache.size < 4096) cache.set(pattern, re);
  }
  return re;
}

/** True when `toolName` matches `pattern`. */
export function matchesToolGlob(pattern: string, toolName: string): boolean {
  return globRegExp(pattern).test(toolName);
}

/** Compiles a list of globs into one predicate: true when any pattern matches. */
export function toolGlob(patterns: readonly string[]): ToolGlob {
  const res = patterns.map(globRegExp);
  return (toolName) => res.some((re) => re.test(toolName));
}
