/**
 * What the chain step tests share: registrations built from a few fields, the view a step gets,
 * and a chain input whose audits are kept in a list.
 */
import {
  names as buildNames,
  type Correlation,
  type ExtensionInvokedPayload,
  correlation as fillCorrelation,
  type GuardedArguments,
  type HandlerRegistration,
  type HookName,
  type Names,
  toolGlob,
} from "@geode/contracts";
import type { NatsConnection } from "@nats-io/transport-node";
import type { RegisteredHandler } from "../handler-registry.js";
import type { ChainInput, ChainView } from "./chain-step.js";

export function handler(
  hook: HookName,
  name: string,
  fields: Partial<HandlerRegistration> = {},
  ns = "chain_test",
): RegisteredHandler {
  const registration: HandlerRegistration = {
    hook,
    name,
    priority: 100,
    timeout_ms: 10_000,
    schema_version: "geode.public-hook.v2",
    failure_mode: "open",
    match: null,
    heartbeat_at: Date.now(),
    lease_ms: 60_000,
    ...fields,
  };
  const patterns = registration.match?.tool_name;
  return {
    registration,
    subject: buildNames(ns).hookHandler(hook, name),
    match: patterns ? toolGlob(patterns) : null,
  };
}

/** What a step sees: `payload` as rewritten so far. */
export function chainView(
  hook: HookName,
  payload: Record<string, unknown>,
  guarded?: GuardedArguments,
): ChainView {
  return { hook, payload, guarded };
}

export interface RecordedAudits {
  added: ExtensionInvokedPayload[];
  /** How many audits were published, each time `publish()` was called. */
  publishes: number[];
}

/** A chain input over `payload` whose audits are recorded. */
export function chainInput(
  hook: HookName,
  payload: Record<string, unknown>,
  options: { input?: Partial<ChainInput>; correlation?: Partial<Correlation> } = {},
): { input: ChainInput; audits: RecordedAudits } {
  const audits: RecordedAudits = { added: [], publishes: [] };
  let unpublished = 0;
  const input: ChainInput = {
    hook,
    correlation: fillCorrelation({ session_id: "s", turn_id: "t", ...options.correlation }),
    payload,
    deadline: undefined,
    audits: {
      add(event) {
        audits.added.push(event);
        unpublished++;
      },
      publish() {
        audits.publishes.push(unpublished);
        unpublished = 0;
      },
    },
    ...options.input,
  };
  return { input, audits };
}

/** A raw handler's answer to an envelope: the reply's bytes or text, or undefined for none. */
type Answer = (envelope: Record<string, unknown>) => Uint8Array | string | undefined;

/** Raw handlers of `hook` on a namespace, answering as `answers` say; `seen` lists what each got. */
export function serveHandlers(
  nc: NatsConnection,
  names: Names,
  hook: HookName,
  answers: Record<string, Answer>,
) {
  const seen: Array<{ name: string; envelope: Record<string, unknown> }> = [];
  const subs = Object.entries(answers).map(([name, answer]) =>
    nc.subscribe(names.hookHandler(hook, name), {
      callback: (_err, m) => {
        const envelope = m.json<Record<string, unknown>>();
        seen.push({ name, envelope });
        const out = answer(envelope);
        if (out !== undefined) m.respond(out);
      },
    }),
  );
  return {
    seen,
    close() {
      for (const s of subs) s.unsubscribe();
    },
  };
}
