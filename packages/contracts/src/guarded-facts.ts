import { hasMcpToolNameForm } from "./mcp.js";
import { maskSecrets } from "./sanitize.js";
import { AGENT_TOOLS, isMcpToolName, MCP_GUARDED_FIELDS, type ToolOwner, toolKindOf } from "./tool-kinds.js";
import { wellFormed } from "./well-formed.js";

/**
 * The guarded facts of a tool call (DESIGN section 3, "A guard never decides on less than what
 * runs"): its shell command, file paths and URL, taken from the call's whole input before any
 * sanitizing bound applies. Handlers see the bounded payload; the dispatcher hands them these
 * argument fields as they came (secrets masked, text made valid Unicode) in the
 * {@link GUARDED_ARGUMENTS_HEADER} header, and a guard evaluates them in place of the bounded ones.
 */

/** The largest guarded fact: a command, a URL, or all of a call's paths together (UTF-8 bytes). */
export const GUARDED_FACT_BYTES = 64 * 1024;
/** The most paths one call may name and still be seen whole by a guard. */
export const GUARDED_PATHS_MAX = 256;
/** The handler-request header that carries a call's guarded argument fields (compact JSON). */
export const GUARDED_ARGUMENTS_HEADER = "Geode-Guarded-Arguments";
/** The reason a closed guard's hook refuses a call whose guarded facts exceed the bounds. */
export const GUARDED_INPUT_TOO_LARGE = "the call's input exceeds the bounds a guard can see";

/** A call's guarded argument fields, and those of them that were over the bounds (and cut). */
export interface GuardedArguments {
  arguments: Record<string, unknown>;
  oversize: string[];
}

const OWNERS = Object.keys(AGENT_TOOLS) as ToolOwner[];
const URL_IN_TEXT = /\bhttps?:\/\/[^\s"'<>]+/;

interface GuardedFields {
  /** Fields read as they are (commands, paths, URLs). */
  whole: Set<string>;
  /** A web tool without a URL field: its URL is the first one found in its text arguments. */
  urlInText: boolean;
}

/**
 * The argument names that hold a tool's command, paths or URL in any owner's tool-kind table: the
 * dispatcher does not know whose tool a call is, and a guard reads the fields of its own owner.
 * A name of an agent's MCP tool, or of the form the mcp-bridge registers its tools under, adds the
 * MCP fields: which registered tools are MCP tools only the guard's view of KV `{ns}_tools` says.
 */
function guardedFields(toolName: string): GuardedFields {
  const whole = new Set<string>();
  let urlInText = false;
  if (isMcpToolName(toolName) || hasMcpToolNameForm(toolName))
    for (const f of [...MCP_GUARDED_FIELDS.command, ...MCP_GUARDED_FIELDS.paths, ...MCP_GUARDED_FIELDS.url])
      whole.add(f);
  for (const owner of OWNERS) {
    const table = AGENT_TOOLS[owner];
    if (!Object.hasOwn(table, toolName)) continue;
    const entry = toolKindOf(owner, toolName);
    if (entry.command !== undefined) whole.add(entry.command);
    for (const p of entry.paths ?? []) whole.add(p);
    if (entry.url !== undefined) whole.add(entry.url);
    else if (entry.kind === "web_fetch") urlInText = true;
  }
  return { whole, urlInText };
}

const utf8Bytes = (s: string): number => Buffer.byteLength(s, "utf8");

/** Text as a guard sees it: valid Unicode, secrets masked, cut to `maxBytes` when longer. */
function guardedText(s: string, maxBytes: number): { text: string; cut: boolean } {
  const text = maskSecrets(wellFormed(s));
  if (utf8Bytes(text) <= maxBytes) return { text, cut: false };
  const cut = Buffer.from(text, "utf8")
    .subarray(0, maxBytes)
    .toString("utf8")
    .replace(/\ufffd$/, "");
  return { text: cut, cut: true };
}

/**
 * The guarded argument fields of a call, from its whole input: each command, path list and URL
 * field of the tool (in any owner's table) as it came, and for a web tool without a URL field the
 * first URL of its text arguments. Over the bounds ({@link GUARDED_FACT_BYTES} a fact, at most
 * {@link GUARDED_PATHS_MAX} paths) a fact is cut and its field listed in `oversize`: a guard that must not
 * fail open then refuses the call rather than decide on a part of it.
 */
export function guardedArguments(toolName: string, args: unknown): GuardedArguments {
  const out: Record<string, unknown> = {};
  const oversize: string[] = [];
  if (args === null || typeof args !== "object" || Array.isArray(args)) return { arguments: out, oversize };
  const input = args as Record<string, unknown>;
  const { whole, urlInText } = guardedFields(toolName);
  for (const field of whole) {
    if (!Object.hasOwn(input, field)) continue;
    const value = input[field];
    if (typeof value === "string") {
      const { text, cut } = guardedText(value, GUARDED_FACT_BYTES);
      out[field] = text;
      if (cut) oversize.push(field);
    } else if (Array.isArray(value)) {
      const paths = value.filter((p): p is string => typeof p === "string");
      const kept: string[] = [];
      let budget = GUARDED_FACT_BYTES;
      let cut = paths.length > GUARDED_PATHS_MAX;
      for (const p of paths.slice(0, GUARDED_PATHS_MAX)) {
        const seen = guardedText(p, budget);
        kept.push(seen.text);
        budget -= utf8Bytes(seen.text);
        cut ||= seen.cut;
        if (seen.cut) break;
      }
      if (cut) oversize.push(field);
      out[field] = kept;
    }
  }
  if (urlInText)
    for (const [field, value] of Object.entries(input)) {
      if (typeof value !== "string" || whole.has(field)) continue;
      const m = URL_IN_TEXT.exec(value);
      if (!m) continue;
      const { text, cut } = guardedText(m[0], GUARDED_FACT_BYTES);
      // A wire key: defined, never assigned (`__proto__` would set the prototype).
      Object.defineProperty(out, field, {
        value: text,
        enumerable: true,
        writable: true,
        configurable: true,
      });
      if (cut) oversize.push(field);
      break;
    }
  return { arguments: out, oversize };
}

/**
 * The guarded fields after a rewrite (payloads before and after): a field the rewrite changed (as the handlers saw it) runs
 * as rewritten, so its new value is the fact; the others keep the caller's whole values. A
 * rewrite that names another tool takes that tool's fields from the rewritten arguments.
 */
export function rewrittenGuardedArguments(
  guarded: GuardedArguments,
  before: Record<string, unknown>,
  after: Record<string, unknown>,
): GuardedArguments {
  const tool = after["tool_name"];
  if (typeof tool !== "string") return { arguments: {}, oversize: [] };
  const fresh = guardedArguments(tool, after["arguments"]);
  if (tool !== before["tool_name"]) return fresh;
  const was = asRecord(before["arguments"]);
  const now = asRecord(after["arguments"]);
  const out: Record<string, unknown> = {};
  const oversize: string[] = [];
  for (const field of new Set([...Object.keys(guarded.arguments), ...Object.keys(fresh.arguments)])) {
    const source = JSON.stringify(was[field]) !== JSON.stringify(now[field]) ? fresh : guarded;
    if (!Object.hasOwn(source.arguments, field)) continue;
    out[field] = source.arguments[field];
    if (source.oversize.includes(field)) oversize.push(field);
  }
  return { arguments: out, oversize };
}

function asRecord(v: unknown): Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

/** The header value of a call's guarded fields, or undefined when it has none. */
export function encodeGuardedArguments(guarded: Record<string, unknown>): string | undefined {
  return Object.keys(guarded).length === 0 ? undefined : JSON.stringify(guarded);
}

/**
 * A handler's reading of the header: the guarded fields as an object, or an empty one when the
 * header is absent or not a JSON object (a handler then decides on the payload alone).
 */
export function decodeGuardedArguments(header: string | undefined): Record<string, unknown> {
  if (header === undefined || header === "") return {};
  try {
    const parsed: unknown = JSON.parse(header);
    return asRecord(parsed);
  } catch {
    return {};
  }
}
