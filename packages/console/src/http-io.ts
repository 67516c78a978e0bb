import type { IncomingMessage, ServerResponse } from "node:http";
import { decodeJson } from "@geode/bus";
import { ErrorCode, GeodeError } from "@geode/contracts";
import type { z } from "zod";

/** Largest JSON body an action accepts. */
const MAX_BODY_BYTES = 64 * 1024;

/** An API error: an HTTP status and the wire's coded body `{"error": {code, message, details?}}`. */
export class ApiError extends Error {
  override readonly name = "ApiError";
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
  }
}

export const badRequest = (message: string, details?: Record<string, unknown>) =>
  new ApiError(400, ErrorCode.InvalidRequest, message, details);

const STATUS_OF: ReadonlyMap<string, number> = new Map([
  [ErrorCode.InvalidRequest, 400],
  [ErrorCode.SessionPaused, 409],
  [ErrorCode.Unavailable, 503],
  [ErrorCode.Timeout, 504],
]);

/** Any throw as an ApiError: GeodeErrors keep their code, anything else is `internal`. */
export function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  if (err instanceof GeodeError) return new ApiError(STATUS_OF.get(err.code) ?? 502, err.code, err.message);
  return new ApiError(500, ErrorCode.Internal, "internal error");
}

const API_HEADERS = {
  "content-type": "application/json; charset=utf-8",
  "cache-control": "no-store",
  "x-content-type-options": "nosniff",
};

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const data = JSON.stringify(body);
  res.writeHead(status, { ...API_HEADERS, ...headers, "content-length": Buffer.byteLength(data) });
  res.end(data);
}

export function sendError(res: ServerResponse, err: ApiError): void {
  const error = { code: err.code, message: err.message, ...(err.details ? { details: err.details } : {}) };
  sendJson(res, err.status, { error });
}

/** Reads a JSON object body (`application/json`, at most MAX_BODY_BYTES). */
async function readJsonObject(req: IncomingMessage): Promise<Record<string, unknown>> {
  const type = (req.headers["content-type"] ?? "").split(";")[0]?.trim().toLowerCase();
  if (type !== "application/json") throw badRequest("the body must be application/json");
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw badRequest(`the body is larger than ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk as Buffer);
  }
  let body: unknown;
  try {
    // Depth is checked before parsing: nothing downstream recurses through a degenerate body.
    body = size === 0 ? undefined : decodeJson(Buffer.concat(chunks, size));
  } catch (err) {
    throw badRequest(err instanceof GeodeError ? `the ${err.message}` : "the body is not valid JSON");
  }
  if (body === null || typeof body !== "object" || Array.isArray(body))
    throw badRequest("the body must be a JSON object");
  return body as Record<string, unknown>;
}

/** A bounded page of a list: `?limit=` (1..max, default 50) and `?offset=` (default 0). */
export interface Page {
  limit: number;
  offset: number;
}

export function pageOf(url: URL, max = 200): Page {
  const int = (name: string, fallback: number, min: number, top: number) => {
    const raw = url.searchParams.get(name);
    if (raw === null) return fallback;
    const n = Number(raw);
    if (!/^\d+$/.test(raw) || n < min || n > top)
      throw badRequest(`${name} must be an integer between ${min} and ${top}`, { [name]: raw.slice(0, 32) });
    return n;
  };
  return { limit: int("limit", 50, 1, max), offset: int("offset", 0, 0, 1_000_000) };
}

/** One page of `all`: `{items, total, offset, limit, next_offset}` (`next_offset` null on the last page). */
export function paged<T>(
  all: T[],
  page: Page,
): {
  items: T[];
  total: number;
  offset: number;
  limit: number;
  next_offset: number | null;
} {
  const items = all.slice(page.offset, page.offset + page.limit);
  const end = page.offset + items.length;
  return { items, total: all.length, ...page, next_offset: end < all.length ? end : null };
}

/**
 * Reads an action body (`readJsonObject`) and checks it with its schema from the contracts: the
 * first thing wrong (an unknown field before the others), named by its field, is a 400.
 */
export async function readBody<S extends z.ZodType>(req: IncomingMessage, schema: S): Promise<z.output<S>> {
  const r = schema.safeParse(await readJsonObject(req));
  if (r.success) return r.data;
  throw badRequest(firstIssue(r.error, "invalid body"));
}

/** The first issue of a failed parse as `name message` (an unknown field before the others). */
function firstIssue(error: z.ZodError, fallback: string): string {
  const issue = error.issues.find((i) => i.code === "unrecognized_keys") ?? error.issues[0];
  const path = issue?.path.map(String).join(".") ?? "";
  return path ? `${path} ${issue?.message}` : (issue?.message ?? fallback);
}

/**
 * Reads a route's query string with its schema from the contracts: each parameter at most once;
 * the first thing wrong, named by its parameter, is a 400.
 */
export function readQuery<S extends z.ZodType>(url: URL, schema: S): z.output<S> {
  // A Map: a parameter named `constructor` or `__proto__` is a parameter like any other.
  const raw = new Map<string, string>();
  for (const [k, v] of url.searchParams) {
    if (raw.has(k)) throw badRequest(`${k.slice(0, 32)} is given more than once`);
    raw.set(k, v);
  }
  const r = schema.safeParse(Object.fromEntries(raw));
  if (r.success) return r.data;
  throw badRequest(firstIssue(r.error, "invalid query"));
}
