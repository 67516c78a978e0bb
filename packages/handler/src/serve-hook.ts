import {
  type GeodeConnection,
  type Logger,
  RequestFailedError,
  requestJson,
  serveRequests,
  silentLogger,
} from "@geode/bus";
import {
  decodeGuardedArguments,
  ErrorCode,
  type FailureMode,
  GeodeError,
  GUARDED_ARGUMENTS_HEADER,
  HANDLER_NAME_PATTERN,
  type HandlerMatch,
  type HandlerRegistration,
  HandlerRegistrationSchema,
  type HookDecision,
  type HookEnvelope,
  HookHandlerLeg,
  type HookName,
  invalidDecision,
  isHookName,
  isStoppingAction,
  PROBE_HEADER,
  SchemaVersion,
  TOOL_HOOKS,
  validateDecision,
} from "@geode/contracts";
import { HandlerRegistrations } from "@geode/state";
import { headers, type Msg } from "@nats-io/transport-node";

/**
 * What a handler is told of a call beside its envelope: the call's guarded argument fields (its
 * command, paths and URL as they will run, before any sanitizing bound; `{}` for calls without
 * them). A guard decides on these: the payload's copies may be cut (docs/protocol.md, headers).
 */
export interface HookCall {
  guardedArguments: Record<string, unknown>;
}

/** What a handler returns: a decision, or null for no decision. */
export type HookHandler = (
  envelope: HookEnvelope,
  call: HookCall,
) => HookDecision | null | Promise<HookDecision | null>;

/**
 * A handler's whole answer: its decision, and with no decision an optional note that the
 * dispatcher's audit records as the call's reason (a policy-guard in audit mode says there what
 * would have happened).
 */
export interface HookAnswer {
  decision: HookDecision | null;
  auditReason?: string | undefined;
}

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

/** The envelope of a call, checked: of this hook, in the registered version, of the right shape. */
function checkEnvelope(body: unknown, reg: HandlerRegistration): HookEnvelope {
  const envelope = HookHandlerLeg.request.decode(body) as HookEnvelope;
  if (envelope.name !== reg.hook) throw invalid(`this handler serves ${reg.hook}, not ${envelope.name}`);
  if (envelope.schema_version !== reg.schema_version)
    throw invalid(`this handler is registered for ${reg.schema_version}, not ${envelope.schema_version}`);
  return envelope;
}

/**
 * Serves one public hook handler (see `serveHookAnswers`); `handler` returns its decision alone.
 *
 * ```ts
 * const served = await serveHook(conn, HookName.PreToolUse, { name: "no-rm" }, (env) =>
 *   env.payload.tool_name === "shell" ? { action: "block", reason: "no shell" } : null);
 * ```
 */
export function serveHook(
  connection: GeodeConnection,
  hook: HookName,
  options: ServeHookOptions,
  handler: HookHandler,
): Promise<ServedHook> {
  return serveHookAnswers(connection, hook, options, async (envelope, call) => ({
    decision: await handler(envelope, call),
  }));
}

/**
 * Serves one public hook handler: registers it in KV `{ns}_hook_handlers`, keeps its heartbeat,
 * answers `{ns}.hook.handler.{HookName}.{name}` in queue group `{name}`. What arrives is checked
 * before `handler` sees it (not JSON, nested too deep, or not an envelope of this hook and version:
 * an `invalid_request` reply), and each decision is checked with the contract's rules before the
 * reply (a wrong one becomes an `invalid_decision` error reply, as a throw becomes an error reply).
 * Used by the SDK's `serveHook` and by the services that are handlers (the policy-guard).
 */
export async function serveHookAnswers(
  connection: GeodeConnection,
  hook: HookName,
  options: ServeHookOptions,
  handler: (envelope: HookEnvelope, call: HookCall) => Promise<HookAnswer>,
): Promise<ServedHook> {
  const { nc, names } = connection;
  const log = options.log ?? silentLogger();
  const registration = buildRegistration(hook, options);
  const key = names.handlerKey(hook, registration.name);
  const subject = names.hookHandler(hook, registration.name);
  const registry = await HandlerRegistrations.open(connection);

  // Subscribe before registering, so the dispatcher never sees a registration nobody answers.
  const responder = serveRequests(
    connection,
    subject,
    { queue: registration.name, request: { decode: (body) => checkEnvelope(body, registration) } },
    answerCalls(hook, registration.name, handler, log),
  );
  await nc.flush();
  try {
    await registry.register(registration);
  } catch (err) {
    responder.subscription.unsubscribe();
    throw err;
  }

  let closing = false;
  const heartbeatEvery = Math.max(10, Math.floor(registration.lease_ms / 3));
  const beat = async () => {
    try {
      await registry.register({ ...registration, heartbeat_at: Date.now() });
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
        // The dispatcher stops waiting after timeout_ms, so a call still running past that is
        // answered to nobody: do not let it hold close() hostage.
        await settleWithin(responder.drain(), registration.timeout_ms || DEFAULT_HANDLER_TIMEOUT_MS);
        if (nc.isClosed()) return;
        if (await otherReplicaServing(connection, subject)) return;
        await registry.unregister(registration).catch((err: unknown) => {
          log.warn({ err, key }, "could not delete the registration");
        });
      })();
      return closed;
    },
  };
}

/** The responder's callback: the handler's answer to one call, its decision checked before the reply. */
function answerCalls(
  hook: HookName,
  name: string,
  handler: (envelope: HookEnvelope, call: HookCall) => Promise<HookAnswer>,
  log: Logger,
) {
  return async (envelope: HookEnvelope, msg: Msg) => {
    let answer: HookAnswer;
    try {
      const guardedArguments = decodeGuardedArguments(msg.headers?.get(GUARDED_ARGUMENTS_HEADER));
      answer = await handler(envelope, { guardedArguments });
    } catch (err) {
      log.warn({ err, hook, handler: name }, "hook handler threw");
      throw err;
    }
    const check = validateDecision(hook, answer.decision);
    if (!check.ok) throw invalidDecision(check.error);
    // A note for the audit goes with no decision or one that does not stop the chain (a stopping
    // decision is audited with its own reason).
    const stops = check.decision !== null && isStoppingAction(check.decision.action);
    const note = stops ? undefined : answer.auditReason;
    return HookHandlerLeg.reply.encode({
      decision: check.decision,
      ...(note ? { audit_reason: note } : {}),
    });
  };
}

async function settleWithin(work: Promise<void>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const giveUp = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  await Promise.race([work, giveUp]);
  clearTimeout(timer);
}

/** Asks the handler's queue group whether another replica still answers (this one has drained). */
async function otherReplicaServing(connection: GeodeConnection, subject: string): Promise<boolean> {
  const h = headers();
  h.set(PROBE_HEADER, "1");
  try {
    await requestJson(connection, subject, {}, { timeoutMs: 1_000, headers: h });
    return true;
  } catch (err) {
    if (err instanceof RequestFailedError && err.failure === "no_responders") return false;
    // A replica that is there but slow to answer still counts as serving.
    return true;
  }
}
