import { type Logger, type Responder, serveRequests } from "@geode/bus";
import {
  ErrorCode,
  GeodeError,
  HookHandlerLeg,
  type Names,
  WEBHOOK_SIGNATURE_HEADER,
  WEBHOOK_TIMESTAMP_HEADER,
  type WebhookRecord,
  webhookRegistration,
  webhookSignature,
} from "@geode/contracts";
import { HandlerRegistrations, type RecordWatch, WebhookStore } from "@geode/state";
import type { Msg, NatsConnection } from "@nats-io/transport-node";

/** Largest webhook answer read; a decision is small. */
const MAX_REPLY_BYTES = 256 * 1024;

export interface WebhookBridge {
  /** Keys (`{HookName}.{name}`) of the webhooks this gateway serves now. */
  served(): string[];
  /** Stops serving; registrations stay (their lease runs out; a `closed` one keeps failing closed). */
  stop(): Promise<void>;
}

interface Served {
  record: WebhookRecord;
  responder: Responder;
  timer: ReturnType<typeof setInterval>;
}

/**
 * Serves every webhook of KV `{ns}_webhooks` (`geode handlers add --url`): subscribes to its
 * handler subject in queue group `{name}` (so several gateways call an endpoint once per
 * invocation), keeps its registration's heartbeat, and turns each call into one signed HTTP POST
 * of the envelope, whose answer is the handler's reply. A timeout, a non-2xx answer or an
 * unreachable endpoint is an error reply: the dispatcher records it and applies the handler's
 * failure mode (open: the chain goes on; closed: block).
 */
export async function startWebhookBridge(options: {
  nc: NatsConnection;
  names: Names;
  log: Logger;
}): Promise<WebhookBridge> {
  const { nc, names, log } = options;
  const conn = { nc, names };
  const [store, registry] = await Promise.all([WebhookStore.open(conn), HandlerRegistrations.open(conn)]);
  const served = new Map<string, Served>();
  let stopping = false;

  const beat = async (record: WebhookRecord) => {
    try {
      await registry.register(webhookRegistration(record));
    } catch (err) {
      if (!stopping)
        log.warn({ err, hook: record.hook, handler: record.name }, "webhook registration failed");
    }
  };

  const stopServing = async (key: string) => {
    const s = served.get(key);
    if (!s) return;
    served.delete(key);
    clearInterval(s.timer);
    await s.responder.drain();
  };

  const serve = async (key: string, record: WebhookRecord) => {
    const current = served.get(key);
    if (current && JSON.stringify(current.record) === JSON.stringify(record)) return;
    await stopServing(key);
    const responder = serveRequests(
      nc,
      names.hookHandler(record.hook, record.name),
      { queue: record.name, log, request: HookHandlerLeg.request },
      (_envelope, msg) => callWebhook(record, msg),
    );
    const timer = setInterval(() => void beat(record), Math.max(10, Math.floor(record.lease_ms / 3)));
    timer.unref?.();
    served.set(key, { record, responder, timer });
    await nc.flush();
    await beat(record);
    log.info({ hook: record.hook, handler: record.name }, "serving webhook handler");
  };

  // Changes are applied one after another, in the order the watch saw them.
  let applying: Promise<void> = Promise.resolve();
  const watch: RecordWatch = await store.watch(
    ({ key, value, malformed }) => {
      if (malformed) log.warn({ key }, "ignoring malformed webhook record");
      applying = applying
        .then(async () => {
          if (stopping) return;
          if (value) await serve(key, value);
          else {
            const was = served.get(key)?.record;
            await stopServing(key);
            // Removed by an operator: take its registration down too, if it is still this one.
            if (was) await registry.unregister(webhookRegistration(was)).catch(() => false);
          }
        })
        .catch((err: unknown) => log.error({ err, key }, "webhook change failed"));
    },
    (err) => log.error({ err }, "webhooks watch failed"),
  );
  await applying;

  return {
    served: () => [...served.keys()].sort(),
    async stop() {
      stopping = true;
      await watch.stop();
      await applying;
      await Promise.all([...served.keys()].map((key) => stopServing(key)));
    },
  };
}

/** One signed POST of the envelope (the request's exact bytes); the endpoint's JSON is the reply. */
async function callWebhook(record: WebhookRecord, msg: Msg): Promise<unknown> {
  const timestamp = String(Date.now());
  const headers: Record<string, string> = {
    "content-type": "application/json",
    "user-agent": "geode-agent-gateway",
    [WEBHOOK_TIMESTAMP_HEADER]: timestamp,
    [WEBHOOK_SIGNATURE_HEADER]: webhookSignature(record.secret, timestamp, msg.data),
    "Geode-Hook": record.hook,
    "Geode-Handler": record.name,
  };
  const traceparent = msg.headers?.get("traceparent");
  if (traceparent) headers["traceparent"] = traceparent;
  // The plane puts the handler's name before every error of its (`<name>: <message>`).
  const where = "webhook";
  let res: Response;
  try {
    res = await fetch(record.url, {
      method: "POST",
      headers,
      body: msg.data,
      redirect: "manual",
      ...(record.timeout_ms > 0 ? { signal: AbortSignal.timeout(record.timeout_ms) } : {}),
    });
  } catch (err) {
    if (err instanceof Error && err.name === "TimeoutError")
      throw new GeodeError(ErrorCode.Timeout, `${where} timed out after ${record.timeout_ms} ms`);
    const cause = (err as { cause?: { code?: string } }).cause?.code;
    throw new GeodeError(ErrorCode.Unavailable, `${where} unreachable${cause ? ` (${cause})` : ""}`);
  }
  const text = await readCapped(res);
  if (res.status < 200 || res.status > 299)
    throw new GeodeError(ErrorCode.Unavailable, `${where} answered HTTP ${res.status}`);
  let body: unknown;
  try {
    body = JSON.parse(text ?? "");
  } catch {
    throw new GeodeError(ErrorCode.Internal, `${where} answered something that is not JSON`);
  }
  // An error reply passes through as it came (the dispatcher records its message); anything else
  // must be {"decision": …}, whose rules the dispatcher checks.
  if (body !== null && typeof body === "object" && "error" in body) return body;
  return HookHandlerLeg.reply.decode(body);
}

/** The answer's text, or null past MAX_REPLY_BYTES (the rest is not read). */
async function readCapped(res: Response): Promise<string | null> {
  if (!res.body) return "";
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of res.body) {
    size += chunk.byteLength;
    if (size > MAX_REPLY_BYTES) {
      await res.body.cancel().catch(() => undefined);
      return null;
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}
