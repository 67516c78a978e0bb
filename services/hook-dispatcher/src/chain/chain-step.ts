import type { BusConnection, Logger } from "@geode/bus";
import type {
  AttributedDecision,
  Correlation,
  ExtensionInvokedPayload,
  GeodeError,
  GuardedArguments,
  HookName,
} from "@geode/contracts";
import type { ServiceObserver } from "@geode/service";
import type { HandlerRegistry } from "../handler-registry.js";

/** What every invocation's chain uses, shared by one dispatcher replica. */
export interface ChainContext {
  /** Where handler calls go out, with the service's interceptors. */
  nc: BusConnection;
  registry: HandlerRegistry;
  log: Logger;
  /** Counts each handler call (`geode_handler_calls_total`). */
  observer: ServiceObserver;
}

/** Where a chain's audit events go (see InvocationAudits). */
interface AuditSink {
  add(event: ExtensionInvokedPayload): void;
  /** Publishes what was added so far, ahead of the message about to be sent. */
  publish(): void;
}

export interface ChainInput {
  hook: HookName;
  correlation: Correlation;
  /** The sanitized, validated payload. */
  payload: Record<string, unknown>;
  /** A tool call's guarded argument fields, from its whole input (`guardedArguments`). */
  guarded?: GuardedArguments | undefined;
  /** Epoch ms after which the caller no longer waits; undefined = no caller deadline. */
  deadline: number | undefined;
  /** Set when the caller gave up; the chain stops before the next handler. */
  signal?: AbortSignal | undefined;
  audits: AuditSink;
}

/** What a step sees of the chain: the hook, and the payload as the steps before it rewrote it. */
export interface ChainView {
  readonly hook: HookName;
  readonly payload: Record<string, unknown>;
  /** The guarded argument fields, as rewritten so far (a rewrite of one runs as rewritten). */
  readonly guarded: GuardedArguments | undefined;
}

/** Why a handler turn failed, as recorded in the audit event (only the type, never content). */
export type HandlerErrorType =
  | "Timeout"
  | "NoResponders"
  | "HandlerError"
  | "InvalidDecision"
  | "InvalidRewrite"
  | "LeaseExpired"
  | "Cancelled";

/**
 * What one step of the chain returns, for `runChain` to fold into the outcome: the audit of the
 * handler it concerns, and what it adds to the reply. A step changes nothing itself.
 */
export interface ChainStep {
  handler: string;
  /** Its `extension_invoked` status and reason (only a type or a bounded, redacted note). */
  status: ExtensionInvokedPayload["status"];
  reason: string;
  /** A decision that counts: attributed, and listed as a decision source. */
  decision?: AttributedDecision | undefined;
  /** A handler error: `<handler>: <message>` in `handler_errors`, logged with its type. */
  error?: { type: HandlerErrorType; message: string } | undefined;
  /** The payload and guarded fields as this step rewrote them. */
  rewritten?: Pick<ChainView, "payload" | "guarded"> | undefined;
  /** The chain stops here and the outcome is blocked (`block`, `deny`, or a closed handler failed). */
  blocks: boolean;
  /** The invocation ends here with this error (the caller cancelled or its deadline passed). */
  abort?: GeodeError | undefined;
}
