import { ErrorCode, GeodeError } from "@geode/contracts";

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });

export function encodeJson(value: unknown): Uint8Array {
  return encoder.encode(JSON.stringify(value));
}

/** Decodes a UTF-8 JSON body; anything else is `invalid_request`. An empty body decodes as `{}`. */
export function decodeJson(data: Uint8Array): unknown {
  if (data.byteLength === 0) return {};
  let text: string;
  try {
    text = decoder.decode(data);
  } catch (cause) {
    throw new GeodeError(ErrorCode.InvalidRequest, "body is not valid UTF-8", { cause });
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (cause) {
    throw new GeodeError(ErrorCode.InvalidRequest, "body is not valid JSON", { cause });
  }
}
