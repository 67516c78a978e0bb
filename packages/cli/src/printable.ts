/**
 * Control and format characters (C0, DEL, C1, bidi overrides, zero-width marks) and lone
 * surrogates: what could move a terminal's cursor, start an escape sequence or reorder what a
 * reader sees.
 */
const UNPRINTABLE = /[\p{Cc}\p{Cf}]|\p{Cs}/gu;

/**
 * Text from the projection made safe to print on a terminal: every control or format character
 * becomes U+FFFD, and with `maxChars` the text is cut to that many code points, ending in `…` when
 * it was longer. Stored text was sanitized when written; this holds whatever wrote it.
 */
export function printable(text: string, maxChars?: number): string {
  const clean = text.replace(UNPRINTABLE, "\uFFFD");
  if (maxChars === undefined) return clean;
  const chars = [...clean];
  return chars.length <= maxChars ? clean : `${chars.slice(0, maxChars - 1).join("")}…`;
}
