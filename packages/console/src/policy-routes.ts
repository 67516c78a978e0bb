import type { GeodeConnection } from "@geode/bus";
import { type ConsolePolicies, ConsolePoliciesQuerySchema } from "@geode/contracts";
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

/** The stored sets, by name; a KV that cannot be read is a 503 that says so. */
async function readSets(d: ConsoleDeps) {
  try {
    const store = await d.policies();
    return (await store.list((key) => d.log.warn({ key }, "skipping malformed policy set"))).map(
      policySetView,
    );
  } catch (err) {
    d.log.warn({ err }, "policy sets unreadable");
    throw new ApiError(
      503,
      "unavailable",
      `the policy sets could not be read: KV ${d.conn.names.buckets.policies} is unreachable`,
    );
  }
}

/** The Policies view's route: the sets, the decisions per policy, the latest blocks. */
export const POLICY_ROUTES: Route[] = [
  {
    method: "GET",
    pattern: /^\/api\/policies$/,
    async handle(d, r) {
      const { window = "1h" } = readQuery(r.url, ConsolePoliciesQuerySchema);
      const sets = await readSets(d);
      const [decisions, blocks] = await fromProjection(d, (p) =>
        Promise.all([policyDecisions(p, window), latestPolicyBlocks(p)]),
      );
      sendJson(r.res, 200, { sets, decisions, blocks } satisfies ConsolePolicies);
    },
  },
];
