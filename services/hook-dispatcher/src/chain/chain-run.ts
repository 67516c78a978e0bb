import type { Logger } from "@geode/bus";
import {
  type AttributedDecision,
  type Correlation,
  type DispatchOutcome,
  type ExtensionInvokedPayload,
  type GuardedArguments,
  type HookName,
  SchemaVersion,
} from "@geode/contracts";
import { observe } from "@geode/telemetry";
import type { NatsConnection } from "@nats-io/transport-node";
import type { HandlerRegistry } from "../handler-registry.js";

/** What every invocation's chain uses, shared by one dispatcher replica. */
export interface ChainContext {
  nc: NatsConnection;
  registry: HandlerRegistry;
  log: Logger;
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

/**
 * One invocation's chain as it runs: the payload as rewritten so far and what the handlers
 * decided, failed and stopped. Its `outcome()` is the reply to the invoker.
 */
export class ChainRun {
  payload: Record<string, unknown>;
  /** The guarded argument fields, as rewritten so far (a rewrite of one runs as rewritten). */
  guarded: GuardedArguments | undefined;
  readonly decisions: AttributedDecision[] = [];
  readonly sources: string[] = [];
  readonly errors: string[] = [];
  blocked = false;

  constructor(
    readonly ctx: ChainContext,
    readonly input: ChainInput,
  ) {
    this.payload = input.payload;
    this.guarded = input.guarded;
  }

  get hook(): HookName {
    return this.input.hook;
  }

  /** Records one handler call: its `extension_invoked` (only the status and a bounded reason) and its count. */
  audit(handler: string, status: ExtensionInvokedPayload["status"], reason: string, startedAt: number): void {
    observe.handlerCall(this.input.hook, handler, status);
    this.input.audits.add({
      surface: "hook",
      name: this.input.hook,
      extension: handler,
      status,
      reason,
      duration_ms: Math.round((performance.now() - startedAt) * 1000) / 1000,
    });
  }

  /** A decision that counts: attributed to its handler, and listed as a decision source. */
  decide(decision: AttributedDecision): void {
    this.decisions.push(decision);
    this.sources.push(decision.handler);
  }

  /** The composed outcome (the reply to the invoker). */
  outcome(): DispatchOutcome {
    return {
      schema_version: SchemaVersion.V2,
      name: this.input.hook,
      correlation: this.input.correlation,
      payload: this.payload,
      decisions: this.decisions,
      decision_sources: this.sources,
      handler_errors: this.errors,
      blocked: this.blocked,
    };
  }
}
