/** The ES2024 string methods of Node 20 (the project's `lib` is ES2023). */
interface WellFormedString {
  isWellFormed(): boolean;
  toWellFormed(): string;
}

/**
 * A string as valid Unicode: each lone UTF-16 surrogate becomes U+FFFD (docs/hooks.md#limits).
 * PostgreSQL refuses a lone surrogate in text and jsonb, and UTF-8 cannot carry one.
 */
export function wellFormed(s: string): string {
  const w = s as unknown as WellFormedString;
  return w.isWellFormed() ? s : w.toWellFormed();
}

/** A `\uD800`–`\uDFFF` escape: JSON.stringify writes lone surrogates so, and only those. */
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;
/**
 * One escape of a JSON text, so that an escaped backslash (`\\`) is never read as the start of
 * the escape after it: a high-low pair (kept), a lone surrogate (group 1), any other escape.
 */
const ESCAPES =
  /\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|(\\u[dD][89a-fA-F][0-9a-fA-F]{2})|\\[^u]/g;

/**
 * A JSON text whose lone-surrogate escapes are `\ufffd` instead, so that every string it parses
 * to is valid Unicode. The JSON wire (NATS bodies, HTTP bodies) can carry a lone surrogate only
 * as such an escape: its bytes are UTF-8, which has no encoding for one. Text without any is
 * returned as it is, after one scan.
 */
export function wellFormedJsonText(text: string): string {
  if (!SURROGATE_ESCAPE.test(text)) return text;
  return text.replace(ESCAPES, (m, lone: string | undefined) => (lone ? "\\ufffd" : m));
}
