import { z } from "zod";
import { ConsoleStatsQuerySchema, SessionAgentKindSchema } from "./console-sessions.js";
import { HookNameSchema } from "./hook-name.js";
import { PolicyModeSchema, PolicySetNameSchema } from "./policy-record.js";

/*
 * The console's Policies view (docs/console.md): `GET /api/policies?window=1h`, the stored policy
 * sets, the guard's decisions per policy over the window, and its latest blocks. Decisions are
 * read from the audits of the handler `policy`; the deciding ids come from their reasons.
 */

const int = z.number().int();
const count = int.min(0);

/** `GET /api/policies` query: the window of the decisions chart (`15m`, `1h`, `6h`, `24h`; default `1h`). */
export const ConsolePoliciesQuerySchema = ConsoleStatsQuerySchema;

/** A stored value the policy-guard refused, and why (Cedar's message with its line:column, or the record's fault). */
const ConsoleRefusedPolicySchema = z.strictObject({
  revision: int,
  reason: z.string().max(512),
});

/**
 * One policy set as the policy-guard enforces it (its last good version), without its text; a
 * newer stored value the guard refused is `refused`.
 */
export const ConsolePolicySetSchema = z.strictObject({
  name: PolicySetNameSchema,
  mode: PolicyModeSchema,
  sha256: z.string(),
  /** When this version was written (epoch ms): the set's last change. */
  created_at: int,
  updated_by: z.string(),
  /** Its policies' ids (`set.id`), as reasons and audits name them. */
  policies: z.array(z.string()),
  /** The KV revision of the version in force. */
  revision: int,
  /** The newest stored value, when the guard refused it (this older version stays in force). */
  refused: ConsoleRefusedPolicySchema.nullable(),
});
export type ConsolePolicySet = z.infer<typeof ConsolePolicySetSchema>;

/**
 * What a policy decided: `block` or `deny` when an enforced set stopped a call or prompt, `ask`
 * when an enforced `@ask` policy sent it to a person, `audit` when an audited set would have
 * decided (nothing was enforced).
 */
export const POLICY_OUTCOMES = ["block", "deny", "ask", "audit"] as const;
export const PolicyOutcomeSchema = z.enum(POLICY_OUTCOMES);
export type PolicyOutcome = z.infer<typeof PolicyOutcomeSchema>;

/** Decisions per policy over the window, in equal buckets. */
export const ConsolePolicyDecisionsSchema = z.strictObject({
  window: z.string(),
  window_ms: count,
  bucket_ms: count,
  /** Start of each bucket, epoch ms (each series has one count per bucket). */
  buckets: z.array(int),
  series: z.array(
    z.strictObject({ policy: z.string(), outcome: PolicyOutcomeSchema, counts: z.array(count) }),
  ),
});
export type ConsolePolicyDecisions = z.infer<typeof ConsolePolicyDecisionsSchema>;

/** One call or prompt the guard stopped (enforce) or would have stopped (audit). */
export const ConsolePolicyBlockSchema = z.strictObject({
  ts: int,
  session_id: z.string(),
  turn_id: z.string(),
  tool_call_id: z.string().nullable(),
  /** The gateway agent of the session; null for a runtime's own session. */
  agent: z.string().nullable(),
  agent_kind: SessionAgentKindSchema,
  hook: HookNameSchema,
  /** The tool, when a record of the call names it. */
  tool_name: z.string().nullable(),
  /** What was done (`block`, `deny`), or in audit mode what would have been. */
  action: z.enum(["block", "deny"]),
  mode: PolicyModeSchema,
  policies: z.array(z.string()),
  /** The deciding policy's reason, as text (at most 512 characters). */
  reason: z.string(),
});
export type ConsolePolicyBlock = z.infer<typeof ConsolePolicyBlockSchema>;

/**
 * `GET /api/policies`: the sets in force by name, the stored keys of which nothing is in force (every
 * stored value refused), the decisions chart, the latest 20 blocks newest first.
 */
export const ConsolePoliciesSchema = z.strictObject({
  sets: z.array(ConsolePolicySetSchema),
  refused: z.array(ConsoleRefusedPolicySchema.extend({ key: z.string().max(256) })),
  decisions: ConsolePolicyDecisionsSchema,
  blocks: z.array(ConsolePolicyBlockSchema),
});
export type ConsolePolicies = z.infer<typeof ConsolePoliciesSchema>;
