import {
  type BusConnection,
  busParts,
  createHookClient,
  type Logger,
  RuntimeEventBus,
  serveRequests,
  silentLogger,
} from "@geode/bus";
import { type Names, QueueGroup, type VerifyReply } from "@geode/contracts";
import { NO_OBSERVER, type ServiceObserver } from "@geode/service";
import { AttemptStore, SessionStore } from "@geode/state";
import { resolveParked } from "./owner-resolution.js";
import { startSessionCleanup } from "./session-cleanup.js";
import { builtIn } from "./stages/built-in.js";
import { deliver } from "./stages/deliver.js";
import { postVerify } from "./stages/post-verify.js";
import { preVerify } from "./stages/pre-verify.js";
import { stop } from "./stages/stop.js";
import { openVerifyRun, releaseAttempt, type VerifierDeps } from "./stages/verify-run.js";

export { CANDIDATE_SUMMARY_CHARS, candidateSummary } from "./stages/verify-run.js";

export interface VerifierOptions {
  /** The connection, with the interceptors its doors run (a service's `ServiceContext.bus`). */
  nc: BusConnection;
  names: Names;
  log?: Logger;
  /** Where each stage's span goes (a service's `ServiceContext.observer`; default none). */
  observer?: ServiceObserver;
  /** Publisher of events and timeline records (default: a bus with source `verifier`). */
  events?: RuntimeEventBus;
  /** Budget of each hook invocation (PreVerify, PostVerify, Stop). Default 30 s. */
  hookTimeoutMs?: number;
}

export interface RunningVerifier {
  stop(): Promise<void>;
}

/**
 * One candidate through the verification loop (docs/architecture.md, "The verification loop"):
 *
 *   candidate → PreVerify → built-in verifier → PostVerify → Stop → deliver
 *
 * A revise or continue goes back to the runtime, whose next candidate is the next attempt. When a
 * hook cannot run before the decision, the attempt is given back and the error is the reply.
 */
async function finalize(deps: VerifierDeps, observer: ServiceObserver, body: unknown): Promise<VerifyReply> {
  const run = await openVerifyRun(deps, body);
  let decided: Parameters<typeof deliver>[1];
  try {
    const pre = await observer.span("geode.verify.pre_verify", () => preVerify(run));
    const checked = await observer.span("geode.verify.built_in", async () => builtIn(run, pre));
    const post = await observer.span("geode.verify.post_verify", () => postVerify(run, checked));
    const stopped = await observer.span("geode.verify.stop", () => stop(run, pre, checked, post));
    decided = { pre, checked, post, stop: stopped };
  } catch (err) {
    await releaseAttempt(run);
    throw err;
  }
  return await observer.span("geode.verify.deliver", () => deliver(run, decided));
}

/**
 * The verifier: answers `{ns}.verify.finalize` and `{ns}.verify.resolve` in queue group `verifier`
 * (docs/protocol.md). Stateless apart from KV `{ns}_verify` and `{ns}_sessions`, so replicas scale out;
 * it clears a session's `{ns}_verify` records once the session ended (see `startSessionCleanup`).
 */
export async function startVerifier(options: VerifierOptions): Promise<RunningVerifier> {
  const { names } = options;
  const bus = options.nc;
  const { nc } = busParts(bus);
  const log = options.log ?? silentLogger();
  const events =
    options.events ?? (await RuntimeEventBus.create({ nc: bus, names, source: "verifier", log }));
  const hooks = createHookClient(bus, names);
  const attempts = await AttemptStore.open({ nc, names });
  const cleanup = await startSessionCleanup({ nc, names, attempts, log });
  const hookTimeoutMs = options.hookTimeoutMs ?? 30_000;
  const deps: VerifierDeps = {
    names,
    log,
    events,
    invoke: (hook, payload, correlation) =>
      hooks.invoke(hook, payload, correlation, { timeoutMs: hookTimeoutMs }),
    attempts,
    sessions: await SessionStore.open({ nc, names }),
  };
  const responders = [
    serveRequests(bus, names.verifyFinalize, { queue: QueueGroup.Verifier, log }, (body) =>
      finalize(deps, options.observer ?? NO_OBSERVER, body),
    ),
    serveRequests(bus, names.verifyResolve, { queue: QueueGroup.Verifier, log }, (body) =>
      resolveParked(deps, body),
    ),
  ];
  return {
    async stop() {
      await Promise.all(responders.map((r) => r.drain()));
      await cleanup.stop();
      // A bus given by the caller may carry others' records too; ours are flushed either way.
      await events.flush();
    },
  };
}
