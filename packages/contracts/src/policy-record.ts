import { z } from "zod";
import { POLICY_SET_NAME_PATTERN } from "./names.js";
import { sha256 } from "./sanitize.js";

/* Policy sets of the policy-guard: KV `{ns}_policies`, key = the set's name (DESIGN section 17). */

export const PolicySetNameSchema = z
  .string()
  .regex(POLICY_SET_NAME_PATTERN, "policy set names match [a-z0-9][a-z0-9_-]{0,63}");

/** `enforce`: the set's decisions apply; `audit`: they are computed and recorded, never returned. */
export const PolicyModeSchema = z.enum(["enforce", "audit"]);
export type PolicyMode = z.infer<typeof PolicyModeSchema>;

/** Longest policy set text kept in KV (characters). */
export const MAX_POLICY_TEXT_CHARS = 256 * 1024;

/** One stored policy set: its Cedar text, the SHA-256 of that text, and how it applies. */
export const PolicyRecordSchema = z.strictObject({
  name: PolicySetNameSchema,
  text: z.string().min(1).max(MAX_POLICY_TEXT_CHARS),
  sha256: z.string().regex(/^[0-9a-f]{64}$/, "sha256 is a SHA-256 hex digest"),
  mode: PolicyModeSchema,
  created_at: z.number().int(),
  updated_by: z.string().max(128),
});
export type PolicyRecord = z.infer<typeof PolicyRecordSchema>;

/** A policy set as it is stored when written now: its text's digest, its mode and who wrote it. */
export function policyRecord(name: string, text: string, mode: PolicyMode, updatedBy: string): PolicyRecord {
  return { name, text, sha256: sha256(text), mode, created_at: Date.now(), updated_by: updatedBy };
}
