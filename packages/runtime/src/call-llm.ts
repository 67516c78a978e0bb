import type { RuntimeEventBus } from "@geode/bus";
import { type CorrelationInput, correlation as fillCorrelation, sha256 } from "@geode/contracts";
import {
  errorType,
  type LlmRequest,
  type LlmResponse,
  MiddlewareRegistry,
  runLlmExecution,
  runLlmRequest,
  thaw,
} from "@geode/middleware";

/** The provider call: gets the final request (a private copy) and the caller's signal. */
export type LlmAdapter = (request: LlmRequest, context: { signal: AbortSignal }) => Promise<LlmResponse>;

export interface CallLlmOptions {
  /** Trusted LLM middleware (`registerLlmRequest`, `registerLlmExecution`). */
  registry?: MiddlewareRegistry;
  /** Receives `llm_call_started`, `llm_call_ended` / `llm_call_failed` and `extension_invoked`. */
  events?: Pick<RuntimeEventBus, "emit">;
  signal?: AbortSignal;
}

const idle = new AbortController().signal;

/**
 * Calls an LLM through both LLM join points: `llm_request` transforms (with the cache-prefix
 * guard), then the `llm_execution` onion around `adapter`. Publishes `llm_call_started` before the
 * adapter runs and `llm_call_ended` after it, or `llm_call_failed`. Events carry sizes and hashes,
 * never prompt text.
 */
export async function callLlm(
  adapter: LlmAdapter,
  request: LlmRequest,
  correlation: CorrelationInput = {},
  options: CallLlmOptions = {},
): Promise<LlmResponse> {
  const corr = fillCorrelation(correlation);
  const registry = options.registry ?? new MiddlewareRegistry();
  const signal = options.signal ?? idle;
  const events = options.events;
  const base = { model: request.model, provider: request.provider ?? "" };
  const t0 = performance.now();
  const elapsed = () => Math.round((performance.now() - t0) * 1000) / 1000;
  const failed = (err: unknown, stage: string) =>
    void events?.emit(
      "llm_call_failed",
      { ...base, stage, error_type: errorType(err), duration_ms: elapsed() },
      corr,
    );
  let prepared: Awaited<ReturnType<typeof runLlmRequest>>;
  try {
    prepared = await runLlmRequest(registry, request, { correlation: corr, events, signal });
  } catch (err) {
    failed(err, "llm_request");
    throw err;
  }
  void events?.emit(
    "llm_call_started",
    { ...base, message_count: prepared.messages.length, request_sha256: sha256(prepared) },
    corr,
  );
  let response: LlmResponse;
  try {
    response = await runLlmExecution(
      registry,
      prepared,
      (req, ctx) => adapter(thaw<LlmRequest>(req), { signal: ctx.signal }),
      { correlation: corr, events, signal },
    );
  } catch (err) {
    failed(err, "llm_execution");
    throw err;
  }
  const usage = response["usage"];
  void events?.emit(
    "llm_call_ended",
    { ...base, duration_ms: elapsed(), ...(usage && typeof usage === "object" ? { usage } : {}) },
    corr,
  );
  return response;
}
