import { ErrorCode, GeodeError, MAX_JSON_DEPTH, wellFormedJsonText } from "@geode/contracts";

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });

const OPEN_OBJECT = 0x7b;
const OPEN_ARRAY = 0x5b;
const CLOSE_OBJECT = 0x7d;
const CLOSE_ARRAY = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * UTF-8 JSON of a value, every string in it valid Unicode: a lone surrogate (which JSON.stringify
 * writes as an escape) goes out as U+FFFD, so no body the plane sends can carry one.
 */
export function encodeJson(value: unknown): Uint8Array {
  return encoder.encode(wellFormedJsonText(JSON.stringify(value)));
}

/**
 * The deepest nesting of objects and arrays in a JSON text, by one pass over its bytes (no
 * recursion, nothing allocated). Brackets inside strings do not count; UTF-8 continuation bytes
 * never look like ASCII brackets or quotes. Stops early once `limit` is passed.
 */
export function jsonDepth(data: Uint8Array, limit = Number.POSITIVE_INFINITY): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < data.length; i++) {
    const b = data[i]!;
    if (inString) {
      if (b === BACKSLASH) i++;
      else if (b === QUOTE) inString = false;
    } else if (b === QUOTE) inString = true;
    else if (b === OPEN_OBJECT || b === OPEN_ARRAY) {
      if (++depth > deepest) {
        deepest = depth;
        if (deepest > limit) return deepest;
      }
    } else if (b === CLOSE_OBJECT || b === CLOSE_ARRAY) depth--;
  }
  return deepest;
}

/**
 * Decodes a UTF-8 JSON body; anything else is `invalid_request`: not UTF-8, not JSON, or nested
 * deeper than `MAX_JSON_DEPTH` (checked before parsing, so nothing downstream ever recurses
 * through degenerate input). An empty body decodes as `{}`. Every string decoded is valid Unicode:
 * a lone-surrogate escape (`\ud800`) becomes U+FFFD, so nothing taken from the wire can make
 * PostgreSQL refuse a row later.
 */
export function decodeJson(data: Uint8Array): unknown {
  if (data.byteLength === 0) return {};
  // A text of n bytes nests at most n levels: short bodies need no scan.
  if (data.byteLength > MAX_JSON_DEPTH && jsonDepth(data, MAX_JSON_DEPTH) > MAX_JSON_DEPTH)
    throw new GeodeError(ErrorCode.InvalidRequest, `body nests deeper than ${MAX_JSON_DEPTH} levels`);
  let text: string;
  try {
    text = decoder.decode(data);
  } catch (cause) {
    throw new GeodeError(ErrorCode.InvalidRequest, "body is not valid UTF-8", { cause });
  }
  try {
    return JSON.parse(wellFormedJsonText(text)) as unknown;
  } catch (cause) {
    throw new GeodeError(ErrorCode.InvalidRequest, "body is not valid JSON", { cause });
  }
}
