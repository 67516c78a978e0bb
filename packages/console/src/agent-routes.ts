import type { ConsoleAgents } from "@geode/contracts";
import { agentActivity } from "@geode/projection";
import { AgentStore } from "@geode/state";
import type { Route } from "./console-route.js";
import { ApiError, sendJson } from "./http-io.js";
import { fromProjection } from "./session-routes.js";

/**
 * `GET /api/agents`: every agent allowed to call the gateway (KV `{ns}_agents`) with what the
 * projection knows of it, as `geode agents ls` shows it: kinds, sessions, last seen, its last
 * `geode connect --check` and the guarded hooks the gateway has seen it send.
 */
export const AGENT_ROUTES: Route[] = [
  {
    method: "GET",
    pattern: /^\/api\/agents$/,
    async handle(d, r) {
      const agents = await AgentStore.open(d.conn)
        .then((store) => store.list((key) => d.log.warn({ key }, "skipping malformed agent record")))
        .catch((err: unknown) => {
          d.log.warn({ err }, "agents unreadable");
          throw new ApiError(
            503,
            "unavailable",
            `the agents could not be read: KV ${d.conn.names.buckets.agents} is unreachable`,
          );
        });
      // biome-ignore lint/suspicious/noExplicitAny: the console's projection handle is untyped (raw SQL).
      const activity = await fromProjection(d, (p) => agentActivity(p.db as any, p.ns));
      const byName = new Map(activity.map((a) => [a.agent, a]));
      const items = agents.map(({ name, created_at, groups }) => {
        const a = byName.get(name);
        return {
          name,
          created_at,
          groups: groups ?? [],
          kinds: a?.kinds ?? [],
          last_seen: a && a.last_seen > 0 ? a.last_seen : null,
          sessions: a?.sessions ?? 0,
          last_check: a?.last_check ?? null,
          guarded_hooks: a?.guarded_hooks ?? [],
        };
      });
      sendJson(r.res, 200, { items } satisfies ConsoleAgents);
    },
  },
];
