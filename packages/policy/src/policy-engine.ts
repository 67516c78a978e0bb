import { setFlagsFromString } from "node:v8";
import * as cedar from "@cedar-policy/cedar-wasm/nodejs";
import { HookName } from "@geode/contracts";
import { type PolicyReads, policyReads, trimRequest } from "./policy-reads.js";
import {
  type CallerIdentity,
  type CedarRequest,
  cedarRequests,
  type PolicyHook,
  type TrustedFacts,
} from "./policy-request.js";
import type { CompiledPolicy, CompiledSet } from "./policy-set.js";

// V8 11 (Node 20) aborts the process ("unreachable code" in
// Deoptimizer::DoComputeBuiltinContinuation) when code that inlined a JS → Wasm call is
// deoptimized while the call runs, as `matches` below is around Cedar's call when a guard serves
// calls of varied shapes. With those calls not inlined the guard keeps running.
if (process.versions.v8.startsWith("11.")) setFlagsFromString("--no-turbo-inline-js-wasm-calls");

/** What a group of policies decides for one call. */
export interface PolicyDecision {
  /** `block`/`deny` for a matching forbid, `request_permission`/`ask` for a matching `@ask`, else null. */
  action: "block" | "deny" | "request_permission" | "ask" | null;
  /** The deciding policies' ids. */
  policies: string[];
  /** The first deciding policy's `@reason`, else its id; "" without a decision. */
  reason: string;
}

/** One evaluation: what the enforced sets decide, and what the audited sets would have decided. */
export interface PolicyEvaluation {
  enforce: PolicyDecision;
  audit: PolicyDecision;
  /** Policies whose evaluation failed (Cedar skips them), by id. */
  errors: string[];
}

const NONE: PolicyDecision = { action: null, policies: [], reason: "" };

/** The decision of the policies that matched one call (DESIGN section 17's rules). */
function decide(hook: PolicyHook, matched: CompiledPolicy[]): PolicyDecision {
  const forbids = matched.filter((p) => p.effect === "forbid" && !p.ask);
  if (forbids.length > 0) {
    const action = hook === HookName.PermissionRequest ? "deny" : "block";
    return { action, policies: forbids.map((p) => p.id), reason: forbids[0]?.reason ?? "" };
  }
  const asks = matched.filter((p) => p.ask);
  const askAction =
    hook === HookName.PreToolUse ? "request_permission" : hook === HookName.PermissionRequest ? "ask" : null;
  if (asks.length > 0 && askAction !== null)
    return { action: askAction, policies: asks.map((p) => p.id), reason: asks[0]?.reason ?? "" };
  return NONE;
}

let engines = 0;

/**
 * The loaded policy sets, parsed once per change: every policy goes into one preparsed Cedar set
 * as a `permit` with its own id, so one authorization reports every policy that matches; the
 * original effect, `@ask` and the set's mode then give the decision.
 */
export class PolicyEngine {
  private readonly id = `geode-policies-${++engines}`;
  private byId = new Map<string, CompiledPolicy>();
  private sets: CompiledSet[] = [];
  private reads: PolicyReads = { context: "all", principal: true, resource: true };

  constructor(sets: CompiledSet[] = []) {
    this.load(sets);
  }

  /** Replaces every loaded set at once (what the guard does on each change). */
  load(sets: CompiledSet[]): void {
    const byId = new Map<string, CompiledPolicy>();
    for (const s of sets) for (const p of s.policies) byId.set(p.id, p);
    const staticPolicies: Record<string, string> = {};
    for (const [id, p] of byId) staticPolicies[id] = p.matcher;
    const answer = cedar.preparsePolicySet(this.id, { staticPolicies });
    if (answer.type === "failure")
      throw new Error(`policy sets could not be loaded: ${answer.errors[0]?.message ?? "unknown error"}`);
    this.reads = policyReads([...byId.values()].map((p) => p.matcher));
    this.byId = byId;
    this.sets = sets;
  }

  /** The loaded sets, by name. */
  loaded(): readonly CompiledSet[] {
    return this.sets;
  }

  private matches(request: CedarRequest, into: Set<CompiledPolicy>, errors: Set<string>): void {
    const answer = cedar.statefulIsAuthorized({
      ...(trimRequest(request, this.reads) as unknown as Omit<
        cedar.StatefulAuthorizationCall,
        "preparsedPolicySetId"
      >),
      preparsedPolicySetId: this.id,
    });
    if (answer.type === "failure") throw new Error(answer.errors[0]?.message ?? "authorization failed");
    for (const e of answer.response.diagnostics.errors) errors.add(e.policyId);
    if (answer.response.decision !== "allow") return;
    for (const id of answer.response.diagnostics.reason) {
      const p = this.byId.get(id);
      if (p) into.add(p);
    }
  }

  /**
   * Evaluates one hook call against every loaded set: its sanitized payload, and the trusted facts
   * (the guarded argument fields of its whole input, a registered MCP tool's origin; see
   * `cedarRequests`).
   */
  evaluate(
    hook: PolicyHook,
    payload: Record<string, unknown>,
    sessionId: string,
    caller: CallerIdentity,
    trusted: TrustedFacts = {},
  ): PolicyEvaluation {
    if (this.byId.size === 0) return { enforce: NONE, audit: NONE, errors: [] };
    const matched = new Set<CompiledPolicy>();
    const errors = new Set<string>();
    for (const request of cedarRequests(hook, payload, sessionId, caller, trusted))
      this.matches(request, matched, errors);
    const ordered = [...this.byId.values()].filter((p) => matched.has(p));
    return {
      enforce: decide(
        hook,
        ordered.filter((p) => p.mode === "enforce"),
      ),
      audit: decide(
        hook,
        ordered.filter((p) => p.mode === "audit"),
      ),
      errors: [...errors],
    };
  }
}
