import type { GeodeConnection } from "@geode/bus";
import { type ConsolePolicies, ConsolePoliciesQuerySchema, type ConsolePolicySet } from "@geode/contracts";
import { type PolicySetInForce, policySetsInForce, schemaText } from "@geode/policy";
import { PolicyStore } from "@geode/state";
import type { ConsoleDeps, Route } from "./console-route.js";
import { ApiError, readQuery, sendJson } from "./http-io.js";
import { latestPolicyBlocks, policyDecisions, policySetView } from "./policy-overview.js";
import { fromProjection } from "./session-routes.js";

/** Opens the policy sets' bucket on first use (and again after a failure), not at the console's start. */
export function lazyPolicyStore(conn: GeodeConnection): () => Promise<PolicyStore> {
  let opened: Promise<PolicyStore> | undefined;
  return () => {
    opened ??= PolicyStore.open(conn).catch((err: unknown) => {
      opened = undefined;
      throw err;
    });
    return opened;
  };
}

/**
 * The sets as the guard enforces them (each key's last good version in the bucket's history), and
 * the keys of which nothing is in force; a KV that cannot be read is a 503 that says so.
 */
async function readSets(d: ConsoleDeps): Promise<Pick<ConsolePolicies, "sets" | "refused">> {
  let states: PolicySetInForce[];
  try {
    states = policySetsInForce(await (await d.policies()).versions(), schemaText());
  } catch (err) {
    d.log.warn({ err }, "policy sets unreadable");
    throw new ApiError(
      503,
      "unavailable",
      `the policy sets could not be read: KV ${d.conn.names.buckets.policies} is unreachable`,
    );
  }
  const sets: ConsolePolicySet[] = [];
  const refused: ConsolePolicies["refused"] = [];
  for (const s of states)
    if (s.enforced) sets.push(policySetView({ ...s, enforced: s.enforced }));
    else if (s.refused) refused.push({ key: s.key.slice(0, 256), ...s.refused });
  return { sets, refused };
}

/** The Policies view's route: the sets, the decisions per policy, the latest blocks. */
export const POLICY_ROUTES: Route[] = [
  {
    method: "GET",
    pattern: /^\/api\/policies$/,
    async handle(d, r) {
      const { window = "1h" } = readQuery(r.url, ConsolePoliciesQuerySchema);
      const { sets, refused } = await readSets(d);
      const [decisions, blocks] = await fromProjection(d, (p) =>
        Promise.all([policyDecisions(p, window), latestPolicyBlocks(p)]),
      );
      sendJson(r.res, 200, { sets, refused, decisions, blocks } satisfies ConsolePolicies);
    },
  },
];
