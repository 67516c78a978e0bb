import { type PolicyRecord, PolicyRecordSchema } from "@geode/contracts";
import { type CompiledSet, checkPolicySet } from "./policy-set.js";

/** One stored version of a key of KV `{ns}_policies` (its KV history holds the last few). */
export interface StoredPolicyVersion {
  key: string;
  revision: number;
  /** True for a delete or purge: the set was removed at this revision. */
  deleted: boolean;
  /** The value parsed as JSON; undefined when it is not JSON (or was deleted). */
  value: unknown;
}

/** A stored value the guard does not enforce, and why. */
export interface RefusedPolicyVersion {
  revision: number;
  /** Why it was refused (at most 512 characters). */
  reason: string;
}

/** A key of `{ns}_policies` as the policy-guard enforces it. */
export interface PolicySetInForce {
  key: string;
  /** The version in force: the newest stored version that checks, unless the set was removed since. */
  enforced: { record: PolicyRecord; set: CompiledSet; revision: number } | null;
  /** The newest stored value, when it was refused (so an older version, or none, is in force). */
  refused: RefusedPolicyVersion | null;
}

const MAX_REASON = 512;

/** A stored value checked as a write is: a valid record, named as its key, whose text checks. */
export function checkStoredPolicy(
  key: string,
  value: unknown,
  schema: string,
): { record: PolicyRecord; set: CompiledSet } | { reason: string } {
  if (value === undefined) return { reason: "the value is not JSON" };
  const parsed = PolicyRecordSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.length ? ` at ${issue.path.join(".")}` : "";
    return {
      reason: `not a valid policy record${where}: ${issue?.message ?? "invalid"}`.slice(0, MAX_REASON),
    };
  }
  const record = parsed.data;
  if (record.name !== key)
    return { reason: `stored under the key ${key} but named ${record.name}`.slice(0, MAX_REASON) };
  try {
    return { record, set: checkPolicySet(record.name, record.text, record.mode, schema) };
  } catch (err) {
    return { reason: (err instanceof Error ? err.message : String(err)).slice(0, MAX_REASON) };
  }
}

/**
 * What is in force for each key, from the keys' stored versions (any order): per key, the newest
 * version that checks, unless a delete came after it; a newer value that does not check is
 * reported as refused. This is what the policy-guard enforces after a start, and what `geode
 * policy ls` and the console show. Only the versions newer than the one in force are checked.
 */
export function policySetsInForce(
  versions: readonly StoredPolicyVersion[],
  schema: string,
): PolicySetInForce[] {
  const byKey = new Map<string, StoredPolicyVersion[]>();
  for (const v of versions) {
    const list = byKey.get(v.key) ?? [];
    list.push(v);
    byKey.set(v.key, list);
  }
  const out: PolicySetInForce[] = [];
  for (const [key, list] of byKey) {
    list.sort((a, b) => b.revision - a.revision);
    let refused: RefusedPolicyVersion | null = null;
    let enforced: PolicySetInForce["enforced"] = null;
    for (const v of list) {
      if (v.deleted) break;
      const checked = checkStoredPolicy(key, v.value, schema);
      if ("set" in checked) {
        enforced = { ...checked, revision: v.revision };
        break;
      }
      refused ??= { revision: v.revision, reason: checked.reason };
    }
    if (enforced || refused) out.push({ key, enforced, refused });
  }
  return out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}
