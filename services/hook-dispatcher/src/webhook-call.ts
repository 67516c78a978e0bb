import { randomUUID } from "node:crypto";
import http from "node:http";
import https from "node:https";
import { decodeJson } from "@geode/bus";
import {
  checkHost,
  ErrorCode,
  GeodeError,
  guardedLookup,
  HookHandlerLeg,
  type HostResolver,
  urlHost,
  WEBHOOK_DELIVERY_HEADER,
  WEBHOOK_SIGNATURE_HEADER,
  WEBHOOK_TIMESTAMP_HEADER,
  type WebhookAllowable,
  type WebhookRecord,
  WebhookTargetRefused,
  webhookSignature,
} from "@geode/contracts";
import type { Msg } from "@nats-io/transport-node";

/** Largest webhook answer read; a decision is small. */
const MAX_REPLY_BYTES = 256 * 1024;

export interface WebhookCallOptions {
  /** Address kinds webhooks may reach besides public ones (`GEODE_WEBHOOK_ALLOW`); default none. */
  allow?: readonly WebhookAllowable[];
  /** How host names are resolved before each connection; default the system resolver. */
  resolve?: HostResolver;
}

/** Signed POSTs of envelopes to webhook endpoints, over connections to checked addresses only. */
export interface WebhookCaller {
  /** One signed POST of the envelope (the request's exact bytes); the endpoint's JSON is the reply. */
  call(record: WebhookRecord, msg: Msg): Promise<unknown>;
  /** Closes the kept-alive connections. */
  close(): void;
}

export function webhookCaller(options: WebhookCallOptions = {}): WebhookCaller {
  const allow = options.allow ?? [];
  const lookup = guardedLookup(allow, options.resolve);
  // Every socket of these agents is opened through the guarded lookup, so a kept-alive one stays
  // connected to an address that was checked when it was opened.
  const agents = {
    http: new http.Agent({ keepAlive: true, lookup }),
    https: new https.Agent({ keepAlive: true, lookup }),
  };
  return {
    call: (record, msg) => callWebhook({ allow, lookup, agents }, record, msg),
    close() {
      agents.http.destroy();
      agents.https.destroy();
    },
  };
}

interface CallContext {
  allow: readonly WebhookAllowable[];
  lookup: ReturnType<typeof guardedLookup>;
  agents: { http: http.Agent; https: https.Agent };
}

/**
 * A refused address, a timeout, a non-2xx answer, an unreachable endpoint or an answer that is not
 * JSON is an error reply: the dispatcher records it and applies the handler's failure mode.
 */
async function callWebhook(ctx: CallContext, record: WebhookRecord, msg: Msg): Promise<unknown> {
  // The plane puts the handler's name before every error of its (`<name>: <message>`).
  const where = "webhook";
  const url = new URL(record.url);
  // Node connects to an IP literal without a lookup: checked here; names are checked by the lookup.
  const host = checkHost(urlHost(url), ctx.allow);
  if (host.verdict === "refused") throw refused(where, host.reason);
  const timestamp = String(Date.now());
  const delivery = randomUUID();
  const headers: Record<string, string> = {
    "Content-Type": "application/json",
    "Content-Length": String(msg.data.byteLength),
    "User-Agent": "geode-hook-dispatcher",
    [WEBHOOK_TIMESTAMP_HEADER]: timestamp,
    [WEBHOOK_DELIVERY_HEADER]: delivery,
    [WEBHOOK_SIGNATURE_HEADER]: webhookSignature(record.secret, timestamp, delivery, msg.data),
    "Geode-Hook": record.hook,
    "Geode-Handler": record.name,
  };
  const traceparent = msg.headers?.get("traceparent");
  if (traceparent) headers["traceparent"] = traceparent;
  const signal = record.timeout_ms > 0 ? AbortSignal.timeout(record.timeout_ms) : undefined;
  let status: number;
  let text: string | null;
  try {
    const res = await post(ctx, url, headers, msg.data, signal);
    status = res.statusCode ?? 0;
    text = await readCapped(res);
  } catch (err) {
    if (signal?.aborted)
      throw new GeodeError(ErrorCode.Timeout, `${where} timed out after ${record.timeout_ms} ms`);
    if (err instanceof WebhookTargetRefused) throw refused(where, err.message);
    const code = errorCode(err);
    throw new GeodeError(ErrorCode.Unavailable, `${where} unreachable${code ? ` (${code})` : ""}`);
  }
  if (status < 200 || status > 299)
    throw new GeodeError(ErrorCode.Unavailable, `${where} answered HTTP ${status}`);
  let body: unknown;
  try {
    // decodeJson checks the nesting first: a degenerate answer never reaches recursive code.
    body = text ? decodeJson(Buffer.from(text, "utf8")) : undefined;
  } catch {
    throw new GeodeError(ErrorCode.Internal, `${where} answered something that is not JSON`);
  }
  if (body === undefined)
    throw new GeodeError(ErrorCode.Internal, `${where} answered something that is not JSON`);
  // An error reply passes through as it came (the dispatcher records its message); anything else
  // must be {"decision": …}, whose rules the dispatcher checks.
  if (body !== null && typeof body === "object" && "error" in body) return body;
  return HookHandlerLeg.reply.decode(body);
}

function refused(where: string, reason: string): GeodeError {
  return new GeodeError(ErrorCode.PolicyDenied, `${where} refused: ${reason}`);
}

/** The POST's response (redirects are answers, never followed). */
function post(
  ctx: CallContext,
  url: URL,
  headers: Record<string, string>,
  body: Uint8Array,
  signal: AbortSignal | undefined,
): Promise<http.IncomingMessage> {
  const secure = url.protocol === "https:";
  return new Promise((resolve, reject) => {
    const req = (secure ? https : http).request(
      url,
      {
        method: "POST",
        headers,
        agent: secure ? ctx.agents.https : ctx.agents.http,
        lookup: ctx.lookup,
        ...(signal ? { signal } : {}),
      },
      resolve,
    );
    req.on("error", reject);
    req.end(body);
  });
}

/** `ECONNREFUSED` and the like; several addresses tried give the first one's. */
function errorCode(err: unknown): string | undefined {
  const e = err as { code?: unknown; errors?: Array<{ code?: unknown }> };
  const code = e.code ?? e.errors?.[0]?.code;
  return typeof code === "string" ? code : undefined;
}

/** The answer's text, or null past MAX_REPLY_BYTES (the rest is not read). */
async function readCapped(res: http.IncomingMessage): Promise<string | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res as AsyncIterable<Buffer>) {
    size += chunk.byteLength;
    if (size > MAX_REPLY_BYTES) {
      res.destroy();
      return null;
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}
