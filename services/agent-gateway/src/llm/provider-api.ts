import type { IncomingHttpHeaders } from "node:http";
import type { LlmProviderKind, LlmUsage } from "@geode/contracts";

/**
 * What differs between the provider APIs the gateway fronts (DESIGN section 21): which calls are
 * model calls, where their model and stream flag are, where the key goes, how usage is written and
 * what an error looks like, so the agent's SDK reads the gateway's refusals as its provider's.
 */

/** The slots agents' SDKs put a key in, in the order they are read. */
const KEY_HEADERS = ["x-api-key", "x-goog-api-key"] as const;

/**
 * The agent's token wherever its SDK put it (`Authorization: Bearer`, `x-api-key`,
 * `x-goog-api-key`, `?key=`), as an `Authorization` value the agent directory reads; undefined
 * when there is none.
 */
export function agentAuthorization(headers: IncomingHttpHeaders, query: URLSearchParams): string | undefined {
  const auth = headers.authorization;
  if (typeof auth === "string" && auth !== "") return auth;
  for (const name of KEY_HEADERS) {
    const v = headers[name];
    if (typeof v === "string" && v !== "") return `Bearer ${v}`;
  }
  const key = query.get("key");
  return key ? `Bearer ${key}` : undefined;
}

/** Request headers never forwarded: hop-by-hop ones, the agent's token slots, the gateway's own. */
const DROPPED = new Set([
  "host",
  "connection",
  "keep-alive",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "content-length",
  "accept-encoding",
  "authorization",
  "cookie",
  "x-geode-session",
  ...KEY_HEADERS,
]);

/** The headers sent to the provider: the agent's, less its token, with the provider key in the kind's slot. */
export function upstreamHeaders(
  kind: LlmProviderKind,
  headers: IncomingHttpHeaders,
  key: string,
  bodyBytes: number,
): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers))
    if (value !== undefined && !DROPPED.has(name)) out[name] = value;
  // Usage is read from the answer as it passes: it must come uncompressed.
  out["accept-encoding"] = "identity";
  out["content-length"] = String(bodyBytes);
  if (kind === "openai") out["authorization"] = `Bearer ${key}`;
  else if (kind === "anthropic") out["x-api-key"] = key;
  else out["x-goog-api-key"] = key;
  return out;
}

/** Response headers never passed back (hop-by-hop; node:http frames the body itself). */
export const DROPPED_RESPONSE_HEADERS = new Set([
  "connection",
  "keep-alive",
  "transfer-encoding",
  "trailer",
  "upgrade",
]);

/** One model call as the gateway meters it. */
export interface ModelCall {
  model: string;
  stream: boolean;
}

const GEMINI_CALL = /(?:^|\/)models\/([^/:]+):(generateContent|streamGenerateContent)$/;

/**
 * The model call a request makes, or null when the path is no model call of the kind (listing
 * models, counting tokens: forwarded, not metered).
 */
export function modelCallOf(kind: LlmProviderKind, path: string, body: unknown): ModelCall | null {
  const b = body !== null && typeof body === "object" ? (body as Record<string, unknown>) : {};
  const model = typeof b["model"] === "string" ? b["model"] : "";
  if (kind === "openai") {
    if (!/(?:^|\/)(responses|chat\/completions)$/.test(path)) return null;
    return { model, stream: b["stream"] === true };
  }
  if (kind === "anthropic") {
    if (!/(?:^|\/)messages$/.test(path)) return null;
    return { model, stream: b["stream"] === true };
  }
  const m = GEMINI_CALL.exec(path);
  if (!m) return null;
  return { model: decodeURIComponent(m[1] ?? ""), stream: m[2] === "streamGenerateContent" };
}

/** Which error the gateway answers with. */
export type GatewayErrorCode =
  | "cost_limit_exceeded"
  | "rate_limit_exceeded"
  | "invalid_api_key"
  | "unknown_provider"
  | "model_not_allowed"
  | "request_too_large"
  | "invalid_request"
  | "provider_unavailable"
  | "provider_timeout";

const ANTHROPIC_TYPES: Record<GatewayErrorCode, string> = {
  cost_limit_exceeded: "rate_limit_error",
  rate_limit_exceeded: "rate_limit_error",
  invalid_api_key: "authentication_error",
  unknown_provider: "not_found_error",
  model_not_allowed: "permission_error",
  request_too_large: "request_too_large",
  invalid_request: "invalid_request_error",
  provider_unavailable: "api_error",
  provider_timeout: "api_error",
};

const GOOGLE_STATUS: Record<number, string> = {
  400: "INVALID_ARGUMENT",
  401: "UNAUTHENTICATED",
  403: "PERMISSION_DENIED",
  404: "NOT_FOUND",
  413: "INVALID_ARGUMENT",
  429: "RESOURCE_EXHAUSTED",
  502: "UNAVAILABLE",
  503: "UNAVAILABLE",
  504: "DEADLINE_EXCEEDED",
};

/** An error body in the provider's own shape, with the gateway's code where the shape has room for it. */
export function errorBody(
  kind: LlmProviderKind | undefined,
  status: number,
  code: GatewayErrorCode,
  message: string,
): unknown {
  if (kind === "anthropic")
    return { type: "error", error: { type: ANTHROPIC_TYPES[code], message: `${code}: ${message}` } };
  if (kind === "gemini")
    return {
      error: {
        code: status,
        message: `${code}: ${message}`,
        status: GOOGLE_STATUS[status] ?? "INTERNAL",
        details: [
          {
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            reason: code.toUpperCase(),
            domain: "geode",
          },
        ],
      },
    };
  return { error: { message, type: code, param: null, code } };
}

const num = (v: unknown): number | undefined =>
  typeof v === "number" && Number.isFinite(v) && v >= 0 ? Math.floor(v) : undefined;

/**
 * Folds the usage fields of one answer, or one streamed event, into `usage` (later fields replace
 * earlier ones: streamed counts are running totals). `input_tokens` always includes cached input.
 */
export function foldUsage(kind: LlmProviderKind, obj: unknown, usage: LlmUsage): boolean {
  if (obj === null || typeof obj !== "object") return false;
  const o = obj as Record<string, unknown>;
  if (kind === "gemini") {
    const u = o["usageMetadata"] as Record<string, unknown> | undefined;
    if (!u || typeof u !== "object") return false;
    const prompt = num(u["promptTokenCount"]);
    if (prompt !== undefined) usage.input_tokens = prompt;
    const cached = num(u["cachedContentTokenCount"]);
    if (cached !== undefined) usage.cached_input_tokens = cached;
    const out = num(u["candidatesTokenCount"]);
    const thoughts = num(u["thoughtsTokenCount"]) ?? 0;
    if (out !== undefined || thoughts > 0) usage.output_tokens = (out ?? 0) + thoughts;
    return true;
  }
  if (kind === "anthropic") {
    const message = o["message"] as Record<string, unknown> | undefined;
    const u = (message?.["usage"] ?? o["usage"]) as Record<string, unknown> | undefined;
    if (!u || typeof u !== "object") return false;
    const input = num(u["input_tokens"]);
    const read = num(u["cache_read_input_tokens"]);
    const created = num(u["cache_creation_input_tokens"]);
    // Anthropic counts cached input apart from input; the plane counts it inside.
    if (input !== undefined) {
      usage.cached_input_tokens = read ?? 0;
      usage.input_tokens = input + (read ?? 0) + (created ?? 0);
    }
    const out = num(u["output_tokens"]);
    if (out !== undefined) usage.output_tokens = out;
    return true;
  }
  const response = o["response"] as Record<string, unknown> | undefined;
  const u = (response && typeof response === "object" ? response["usage"] : o["usage"]) as
    | Record<string, unknown>
    | null
    | undefined;
  if (!u || typeof u !== "object") return false;
  if ("prompt_tokens" in u || "completion_tokens" in u) {
    usage.input_tokens = num(u["prompt_tokens"]) ?? usage.input_tokens;
    usage.cached_input_tokens =
      num((u["prompt_tokens_details"] as Record<string, unknown> | undefined)?.["cached_tokens"]) ??
      usage.cached_input_tokens;
    usage.output_tokens = num(u["completion_tokens"]) ?? usage.output_tokens;
    return true;
  }
  usage.input_tokens = num(u["input_tokens"]) ?? usage.input_tokens;
  usage.cached_input_tokens =
    num((u["input_tokens_details"] as Record<string, unknown> | undefined)?.["cached_tokens"]) ??
    usage.cached_input_tokens;
  usage.output_tokens = num(u["output_tokens"]) ?? usage.output_tokens;
  return true;
}
