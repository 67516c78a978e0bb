/**
 * What the chain step tests share: registrations built from a few fields, and a chain run whose
 * audits are kept in a list. Steps without I/O get a context with only a logger; `callHandler`'s
 * test passes a real connection.
 */
import { silentLogger } from "@geode/bus";
import {
  names as buildNames,
  type Correlation,
  type ExtensionInvokedPayload,
  correlation as fillCorrelation,
  type HandlerRegistration,
  type HookName,
  toolGlob,
} from "@geode/contracts";
import type { RegisteredHandler } from "../handler-registry.js";
import { type ChainContext, type ChainInput, ChainRun } from "./chain-run.js";

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

export interface RecordedAudits {
  added: ExtensionInvokedPayload[];
  /** How many audits were published, each time `publish()` was called. */
  publishes: number[];
}

/** A chain run over `payload`; `ctx` defaults to a logger only (for steps without I/O). */
export function chainRun(
  hook: HookName,
  payload: Record<string, unknown>,
  options: {
    ctx?: Partial<ChainContext>;
    input?: Partial<ChainInput>;
    correlation?: Partial<Correlation>;
  } = {},
): { run: ChainRun; audits: RecordedAudits } {
  const audits: RecordedAudits = { added: [], publishes: [] };
  let unpublished = 0;
  const ctx = { log: silentLogger(), ...options.ctx } as ChainContext;
  const run = new ChainRun(ctx, {
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
  });
  return { run, audits };
}
