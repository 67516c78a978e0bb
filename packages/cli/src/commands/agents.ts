import { randomBytes } from "node:crypto";
import { parseArgs } from "node:util";
import { connectBus } from "@geode/bus";
import {
  AgentGroupSchema,
  AgentNameSchema,
  names as buildNames,
  ErrorCode,
  GeodeError,
  sha256,
} from "@geode/contracts";
import { type AgentActivity, type AgentCheck, agentActivity } from "@geode/projection";
import { loadConfig } from "@geode/service";
import { AgentStore } from "@geode/state";
import { type CommandIO, type CommandModule, UsageError } from "../command.js";
import { openExistingProjection } from "../projection-from-env.js";
import { renderTable } from "../render-table.js";

/** A fresh bearer token: 256 random bits, prefixed so it is recognisable in a secret scanner. */
function newAgentToken(): string {
  return `geode_agent_${randomBytes(32).toString("base64url")}`;
}

async function withAgents<T>(io: CommandIO, body: (agents: AgentStore) => Promise<T>): Promise<T | number> {
  const config = loadConfig(io.env);
  const n = buildNames(config.namespace);
  // A NATS that cannot be reached: one line and a hint, from the CLI (see runCli).
  const nc = await connectBus(config, "geode-agents");
  try {
    return await body(await AgentStore.open({ nc, names: n }));
  } finally {
    await nc.close();
  }
}

/** `null` for the refusal of a name already in use; any other error is thrown on. */
function alreadyExists(err: unknown): null {
  if (err instanceof GeodeError && err.code === ErrorCode.InvalidRequest) return null;
  throw err;
}

function agentName(value: string | undefined): string {
  if (value === undefined) throw new UsageError("give an agent name");
  const parsed = AgentNameSchema.safeParse(value);
  if (!parsed.success) throw new UsageError(`agent names match [a-z0-9][a-z0-9_-]{0,63}, got ${value}`);
  return parsed.data;
}

function groupNames(values: string[] | undefined): string[] {
  return (values ?? []).map((g) => {
    if (!AgentGroupSchema.safeParse(g).success)
      throw new UsageError(`group names match [a-z0-9][a-z0-9_-]{0,63}, got ${g}`);
    return g;
  });
}

/**
 * `geode agents add NAME [--group G]…`: creates an agent allowed to call the agent gateway, in the
 * groups policies see it in, and prints its bearer token once, alone on the last line; KV
 * `{ns}_agents` keeps only its SHA-256.
 */
export const agentsAddCommand: CommandModule = {
  async run(args, io) {
    const { positionals, values } = parseArgs({
      args,
      allowPositionals: true,
      options: { group: { type: "string", multiple: true } },
    });
    if (positionals.length > 1) throw new UsageError("give one agent name");
    const name = agentName(positionals[0]);
    const groups = groupNames(values.group);
    const token = newAgentToken();
    return withAgents(io, async (agents) => {
      if ((await agents.add(name, sha256(token), groups).catch(alreadyExists)) === null) {
        io.err(`agent ${name} already exists (remove it first with 'geode agents rm ${name}')\n`);
        return 1;
      }
      io.out(
        `agent ${name} added. Its token is shown only now; its hooks read it from GEODE_AGENT_TOKEN:\n${token}\n`,
      );
      return 0;
    });
  },
};

/** What the projection knows of each agent's work; undefined (said on stderr) when there is no projection here. */
async function activityOf(io: CommandIO): Promise<Map<string, AgentActivity> | undefined> {
  const projection = await openExistingProjection(loadConfig(io.env), "geode agents ls", io).catch(
    (err: unknown) => {
      io.err(`geode agents ls: no activity shown: ${err instanceof Error ? err.message : err}\n`);
      return undefined;
    },
  );
  if (!projection) return undefined;
  try {
    return new Map((await agentActivity(projection.db, projection.ns)).map((a) => [a.agent, a]));
  } finally {
    await projection.close();
  }
}

const when = (ms: number) => (ms > 0 ? new Date(ms).toISOString().replace("T", " ").slice(0, 19) : "-");

/** The last `geode connect --check`: `ok` or `problem`, its kind and when; the problem's line in `--json`. */
const checkCell = (c: AgentCheck | null) =>
  c === null ? "never" : `${c.ok ? "ok" : "problem"} (${c.agent_kind}, ${when(c.at)})`;

/**
 * `geode agents ls [--json]`: every agent allowed to call the gateway, with what the projection
 * knows of its work: the agent kinds its sessions were, when it was last seen, its sessions, the
 * hook calls audited in them and how many blocked or denied, its last `geode connect --check`
 * that reached the gateway, and which guarded hooks (PreToolUse, PermissionRequest) the gateway
 * has seen it send: an agent whose guarded hooks were never seen is not governed.
 */
export const agentsLsCommand: CommandModule = {
  async run(args, io) {
    const { values } = parseArgs({ args, options: { json: { type: "boolean", default: false } } });
    return withAgents(io, async (store) => {
      const agents = await store.list((key) => io.err(`skipping malformed agent record ${key}\n`));
      if (agents.length === 0) {
        io.out(values.json ? "[]\n" : "no agents (add one with 'geode agents add <name>')\n");
        return 0;
      }
      const activity = await activityOf(io);
      const rows = agents.map(({ name, created_at, groups }) => {
        const a = activity?.get(name);
        return {
          name,
          created_at,
          groups: groups ?? [],
          kinds: a?.kinds ?? [],
          last_seen: a?.last_seen ?? null,
          sessions: a?.sessions ?? 0,
          hook_calls: a?.hook_calls ?? 0,
          blocks: a?.blocks ?? 0,
          last_check: a?.last_check ?? null,
          guarded_hooks: a?.guarded_hooks ?? [],
        };
      });
      if (values.json) {
        io.out(`${JSON.stringify(rows)}\n`);
        return 0;
      }
      io.out(
        renderTable(
          [
            "name",
            "created",
            "groups",
            "kinds",
            "last seen",
            "sessions",
            "hook calls",
            "blocks",
            "last check",
            "guarded hooks seen",
          ],
          rows.map((r) => [
            r.name,
            new Date(r.created_at).toISOString(),
            r.groups.join(", ") || "-",
            r.kinds.join(", ") || "-",
            when(r.last_seen ?? 0),
            String(r.sessions),
            String(r.hook_calls),
            String(r.blocks),
            checkCell(r.last_check),
            r.guarded_hooks.join(", ") || "none",
          ]),
        ),
      );
      return 0;
    });
  },
};

export const agentsRmCommand: CommandModule = {
  async run(args, io) {
    const { positionals } = parseArgs({ args, allowPositionals: true, options: {} });
    if (positionals.length > 1) throw new UsageError("give one agent name");
    const name = agentName(positionals[0]);
    return withAgents(io, async (agents) => {
      if (!(await agents.remove(name))) {
        io.err(`no agent ${name}\n`);
        return 1;
      }
      io.out(`removed agent ${name}\n`);
      return 0;
    });
  },
};
