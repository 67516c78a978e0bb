import {
  type AttributedDecision,
  type DispatchOutcome,
  correlation as fillCorrelation,
  type HookName,
  SchemaVersion,
} from "@geode/contracts";

/**
 * A hook-dispatcher's outcome with the given decisions, for unit tests of a stage that reacts to an
 * outcome (the real dispatcher is exercised by the integration tests).
 */
export function scriptedOutcome(
  hook: HookName,
  payload: Record<string, unknown>,
  decisions: AttributedDecision[] = [],
  blocked = false,
): DispatchOutcome {
  return {
    schema_version: SchemaVersion.V2,
    name: hook,
    correlation: fillCorrelation({}),
    payload,
    decisions,
    decision_sources: decisions.map((d) => d.handler),
    handler_errors: [],
    blocked,
  };
}
