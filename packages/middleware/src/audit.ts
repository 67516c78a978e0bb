import type { Correlation, ExtensionInvokedPayload } from "@geode/contracts";
import type { AuditSink, JoinPoint } from "./types.js";

export interface AuditTarget {
  sink: AuditSink | undefined;
  joinPoint: JoinPoint;
  /** What the middleware ran on: the tool name, or the LLM model. */
  name: string;
  correlation: Correlation;
}

/** Publishes one `extension_invoked`; a failing sink never changes middleware behaviour. */
export function audit(
  target: AuditTarget,
  extension: string,
  status: ExtensionInvokedPayload["status"],
  reason: string,
  startedAt: number,
  before: string,
  after: string,
): void {
  if (!target.sink) return;
  try {
    const result = target.sink.emit(
      "extension_invoked",
      {
        surface: target.joinPoint,
        name: target.name,
        extension,
        status,
        reason,
        duration_ms: Math.round((performance.now() - startedAt) * 1000) / 1000,
        request_sha256_before: before,
        request_sha256_after: after,
      },
      target.correlation,
    );
    if (result instanceof Promise) result.catch(() => undefined);
  } catch {
    // observation only
  }
}
