import { encodeJson, ensureBucket, isRevisionConflict, type Logger, silentLogger } from "@geode/bus";
import {
  ErrorCode,
  type FailureMode,
  GeodeError,
  HANDLER_NAME_PATTERN,
  type HandlerMatch,
  type HandlerRegistration,
  HandlerRegistrationSchema,
  type HookDecision,
  type HookEnvelope,
  type HookName,
  isHookName,
  SchemaVersion,
  TOOL_HOOKS,
  toGeodeError,
  validateDecision,
} from "@geode/contracts";
import type { KV } from "@nats-io/kv";
import { headers, type Msg, RequestError } from "@nats-io/transport-node";
import type { GeodeConnection } from "./connection.js";

/** What a handler returns: a decision, or null for no decision. */
export type HookHandler = (envelope: HookEnvelope) => HookDecision | null | Promise<HookDecision | null>;

export interface ServeHookOptions {
  /** Handler name, `[A-Za-z0-9_-]{1,64}`; replicas share it (and its queue group). */
  name: string;
  /** Lower runs first; ties by name. Default 100. */
  priority?: number;
  /** The dispatcher's wait for this handler, ms; 0 = none. Default 10,000. */
  timeoutMs?: number;
  /** Envelope version this handler receives. Default v2. */
  schemaVersion?: SchemaVersion;
  /** `closed`: an error, timeout or absence of this handler blocks. Default `open`. */
  failureMode?: FailureMode;
  /** Tool hooks only: call this handler only for matching tool names (globs). */
  match?: HandlerMatch;
  /** Registration lease, ms; the heartbeat refreshes it every lease/3. Default 15,000. */
  leaseMs?: number;
  log?: Logger;
}

export interface ServedHook {
  /** The registration as written to KV (heartbeat of the moment it was written). */
  readonly registration: HandlerRegistration;
  /**
   * Stops taking calls, answers the ones in flight, and deletes the registration unless another
   * replica of this handler is still serving.
   */
  close(): Promise<void>;
}

export const DEFAULT_HANDLER_PRIORITY = 100;
export const DEFAULT_HANDLER_TIMEOUT_MS = 10_000;
export const DEFAULT_HANDLER_LEASE_MS = 15_000;

/** Header of a replica probe: answered by the SDK itself, never passed to the handler. */
export const PROBE_HEADER = "Geode-Probe";
/** `details.kind` of the error reply sent for a decision the handler got wrong. */
const INVALID_DECISION_KIND = "invalid_decision";

const envelopeDecoder = new TextDecoder();

const invalid = (message: string) => new GeodeError(ErrorCode.InvalidRequest, message);

function hasWildcard(s: string): boolean {
  return s.includes("*") || s.includes(">");
}

/** Checks the options and builds the registration value (refusals are GeodeErrors). */
export function buildRegistration(hook: string, options: ServeHookOptions): HandlerRegistration {
  if (hasWildcard(hook))
    throw invalid("wildcard hook subscriptions are not allowed: register one named hook");
  if (!isHookName(hook)) throw new GeodeError(ErrorCode.UnknownHook, `unknown hook: ${hook}`);
  const name = options.name;
  if (typeof name !== "string" || hasWildcard(name) || !HANDLER_NAME_PATTERN.test(name))
    throw invalid(`handler name must match [A-Za-z0-9_-]{1,64}, got ${JSON.stringify(name)}`);
  if (options.match !== undefined && !TOOL_HOOKS.includes(hook))
    throw invalid(`match is only for tool hooks (${TOOL_HOOKS.join(", ")})`);
  const parsed = HandlerRegistrationSchema.safeParse({
    hook,
    name,
    priority: options.priority ?? DEFAULT_HANDLER_PRIORITY,
    timeout_ms: options.timeoutMs ?? DEFAULT_HANDLER_TIMEOUT_MS,
    schema_version: options.schemaVersion ?? SchemaVersion.V2,
    failure_mode: options.failureMode ?? "open",
    match: options.match ?? null,
    heartbeat_at: Date.now(),
    lease_ms: options.leaseMs ?? DEFAULT_HANDLER_LEASE_MS,
  });
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw invalid(`invalid handler options: ${issue?.path.join(".")}: ${issue?.message}`);
  }
  return parsed.data;
}

/** Two registrations are replicas of one handler when everything but the heartbeat agrees. */
export function sameHandlerConfig(a: HandlerRegistration, b: HandlerRegistration): boolean {
  return (
    a.hook === b.hook &&
    a.name === b.name &&
    a.priority === b.priority &&
    a.timeout_ms === b.timeout_ms &&
    a.schema_version === b.schema_version &&
    a.failure_mode === b.failure_mode &&
    JSON.stringify(a.match ?? null) === JSON.stringify(b.match ?? null)
  );
}

function readRegistration(value: unknown): HandlerRegistration | undefined {
  const parsed = HandlerRegistrationSchema.safeParse(value);
  return parsed.success ? parsed.data : undefined;
}

/**
 * Writes the registration: creates the key, or (a replica) refreshes it when the stored value
 * agrees. A live registration with another configuration is `duplicate_handler`; a dead `open`
 * one (lease expired) is replaced, a dead `closed` one must be removed by an operator first.
 */
async function register(kv: KV, key: string, reg: HandlerRegistration): Promise<void> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const current = await kv.get(key);
    try {
      if (current?.operation !== "PUT") {
        await kv.create(key, JSON.stringify(reg));
        return;
      }
      const stored = readRegistration(current.json());
      const expired = stored !== undefined && stored.heartbeat_at + stored.lease_ms < Date.now();
      if (stored && !sameHandlerConfig(stored, reg) && !(expired && stored.failure_mode === "open")) {
        throw new GeodeError(
          ErrorCode.DuplicateHandler,
          `handler ${reg.name} is already registered for ${reg.hook} with another configuration`,
          { details: { hook: reg.hook, name: reg.name } },
        );
      }
      await kv.update(key, JSON.stringify(reg), current.revision);
      return;
    } catch (err) {
      if (!isRevisionConflict(err)) throw err;
    }
  }
  throw new GeodeError(ErrorCode.Unavailable, `could not register ${key}: registry kept changing`);
}

/**
 * Serves one public hook handler: registers it in KV `{ns}_hook_handlers`, keeps its heartbeat,
 * answers `{ns}.hook.handler.{HookName}.{name}` in queue group `{name}`, checks each decision with
 * the contract's rules before replying (a wrong one becomes an error reply, as does a throw).
 *
 * ```ts
 * const served = await serveHook(conn, HookName.PreToolUse, { name: "no-rm" }, (env) =>
 *   env.payload.tool_name === "shell" ? { action: "block", reason: "no shell" } : null);
 * ```
 */
export async function serveHook(
  connection: GeodeConnection,
  hook: HookName,
  options: ServeHookOptions,
  handler: HookHandler,
): Promise<ServedHook> {
  const { nc, names } = connection;
  const log = options.log ?? silentLogger();
  const registration = buildRegistration(hook, options);
  const key = names.handlerKey(hook, registration.name);
  const subject = names.hookHandler(hook, registration.name);
  const kv = await ensureBucket(nc, names, "hookHandlers");

  const inflight = new Set<Promise<void>>();
  const handle = async (msg: Msg): Promise<void> => {
    if (msg.headers?.get(PROBE_HEADER)) {
      msg.respond(encodeJson({ probe: "ok" }));
      return;
    }
    let reply: unknown;
    try {
      const envelope = JSON.parse(envelopeDecoder.decode(msg.data)) as HookEnvelope;
      const decision = await handler(envelope);
      const check = validateDecision(hook, decision);
      reply = check.ok
        ? { decision: check.decision }
        : {
            error: {
              code: ErrorCode.InvalidRequest,
              message: check.error,
              details: { kind: INVALID_DECISION_KIND },
            },
          };
    } catch (err) {
      const gerr = toGeodeError(err);
      log.warn({ err, hook, handler: registration.name }, "hook handler threw");
      reply = gerr.toReply();
    }
    try {
      msg.respond(encodeJson(reply));
    } catch (err) {
      log.warn({ err, hook, handler: registration.name }, "could not reply to the dispatcher");
    }
  };

  // Subscribe before registering, so the dispatcher never sees a registration nobody answers.
  const subscription = nc.subscribe(subject, {
    queue: registration.name,
    callback: (err, msg) => {
      if (err) {
        log.error({ err, subject }, "handler subscription error");
        return;
      }
      const p = handle(msg).finally(() => inflight.delete(p));
      inflight.add(p);
    },
  });
  await nc.flush();
  try {
    await register(kv, key, registration);
  } catch (err) {
    subscription.unsubscribe();
    throw err;
  }

  let closing = false;
  const heartbeatEvery = Math.max(10, Math.floor(registration.lease_ms / 3));
  const beat = async () => {
    try {
      await register(kv, key, { ...registration, heartbeat_at: Date.now() });
    } catch (err) {
      if (!closing) log.warn({ err, key }, "handler heartbeat failed");
    }
  };
  let beating: Promise<void> = Promise.resolve();
  const timer = setInterval(() => {
    if (!closing) beating = beat();
  }, heartbeatEvery);
  timer.unref?.();

  let closed: Promise<void> | undefined;
  return {
    registration,
    close() {
      closed ??= (async () => {
        closing = true;
        clearInterval(timer);
        await beating;
        if (!subscription.isClosed()) await subscription.drain();
        // The dispatcher stops waiting after timeout_ms, so a call still running past that is
        // answered to nobody: do not let it hold close() hostage.
        await settleWithin(inflight, registration.timeout_ms || DEFAULT_HANDLER_TIMEOUT_MS);
        if (nc.isClosed()) return;
        if (await otherReplicaServing(connection, subject)) return;
        const current = await kv.get(key).catch(() => null);
        const stored = current?.operation === "PUT" ? readRegistration(current.json()) : undefined;
        if (current && stored && sameHandlerConfig(stored, registration)) {
          await kv.delete(key, { previousSeq: current.revision }).catch((err: unknown) => {
            if (!isRevisionConflict(err)) log.warn({ err, key }, "could not delete the registration");
          });
        }
      })();
      return closed;
    },
  };
}

async function settleWithin(pending: Set<Promise<void>>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const giveUp = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  const all = (async () => {
    while (pending.size > 0) await Promise.allSettled([...pending]);
  })();
  await Promise.race([all, giveUp]);
  clearTimeout(timer);
}

/** Asks the handler's queue group whether another replica still answers (this one has drained). */
async function otherReplicaServing(connection: GeodeConnection, subject: string): Promise<boolean> {
  const h = headers();
  h.set(PROBE_HEADER, "1");
  try {
    await connection.nc.request(subject, new Uint8Array(0), { timeout: 1_000, headers: h });
    return true;
  } catch (err) {
    if (err instanceof RequestError && err.isNoResponders()) return false;
    // A replica that is there but slow to answer still counts as serving.
    return true;
  }
}
