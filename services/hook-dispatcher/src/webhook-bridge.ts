import { type BusConnection, busParts, type Logger, type Responder, serveRequests } from "@geode/bus";
import { HookHandlerLeg, type Names, type WebhookRecord, webhookRegistration } from "@geode/contracts";
import { HandlerRegistrations, type RecordWatch, WebhookStore } from "@geode/state";
import { type WebhookCallOptions, webhookCaller } from "./webhook-call.js";

export interface WebhookBridge {
  /** Keys (`{HookName}.{name}`) of the webhooks this dispatcher replica serves now. */
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
 * handler subject in queue group `{name}` (so several dispatcher replicas call an endpoint once
 * per invocation), keeps its registration's heartbeat, and turns each call into one signed HTTP POST
 * of the envelope, whose answer is the handler's reply. A refused address, a timeout, a non-2xx
 * answer or an unreachable endpoint is an error reply: the dispatcher records it and applies the
 * handler's failure mode (open: the chain goes on; closed: block).
 */
export async function startWebhookBridge(
  options: { nc: BusConnection; names: Names; log: Logger } & WebhookCallOptions,
): Promise<WebhookBridge> {
  const { names, log } = options;
  const bus = options.nc;
  const { nc } = busParts(bus);
  const conn = { nc, names };
  const caller = webhookCaller(options);
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
      bus,
      names.hookHandler(record.hook, record.name),
      { queue: record.name, log, request: HookHandlerLeg.request },
      (_envelope, msg) => caller.call(record, msg),
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
      caller.close();
    },
  };
}
