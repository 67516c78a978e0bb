/**
 * Per-role NATS users and permissions of one GEODE deployment (docs/operations.md, "NATS users and permissions"), rendered as a
 * nats-server 2.9 configuration file.
 *
 * nats-server 2.9 has no permission templates for users defined in a config file (templates such as
 * `{{name()}}` exist only for JWT users), so every handler and every remote tool provider gets its
 * own user, generated from a list of names. Adding one means regenerating the file and reloading the
 * server (`nats-server --signal reload`); nothing else changes.
 *
 * Passwords are never written here: each user's password is the environment variable named by
 * `passwordEnvVar(user)` (a `$VAR` reference resolved by nats-server at start; a missing variable stops
 * the server), so the committed file holds no secret. A variable may hold a bcrypt hash (`$2a$…`).
 *
 * Run `tsx infra/nats/nats-roles.ts --namespace geode --handler policy-guard > infra/nats/geode.conf`.
 */
import { names as buildNames, DEFAULT_NAMESPACE, type Names, resultChunkPrefix } from "@geode/contracts";

export type NatsRole =
  | "runtime"
  | "hook-dispatcher"
  | "tool-executor"
  | "verifier"
  | "activity-recorder"
  | "agent-gateway"
  | "policy-guard"
  | "mcp-bridge"
  | "notary"
  | "handler"
  | "tool-provider"
  | "approver"
  | "operator";

export interface NatsPermissions {
  publish: string[];
  /** Subjects denied although `publish` allows them (the operator's wildcard, not the notary's checkpoints). */
  publishDeny: string[];
  subscribe: string[];
  /** May publish one reply to the reply subject of each request it received. */
  allowResponses: boolean;
}

export interface NatsUser {
  user: string;
  role: NatsRole;
  /** The environment variable that holds this user's password. */
  passwordEnv: string;
  /**
   * The inbox prefix this user's connection must use (`inboxPrefix` connect option) when it is not
   * `_INBOX`: handlers, tool providers and approvers may only read replies sent to their own prefix,
   * so they cannot read other components' replies.
   */
  inboxPrefix: string;
  permissions: NatsPermissions;
}

export interface NatsRolesOptions {
  /** Default `geode`. */
  namespace?: string;
  /** Hook handler names (`[A-Za-z0-9_-]{1,64}`): one user `handler-<name>` each. */
  handlers?: readonly string[];
  /** Remote tool names: one user `tool-<name>` each, serving `{ns}.tool.terminal.<name>`. */
  toolProviders?: readonly string[];
  /** Account name. Default `GEODE`. */
  account?: string;
}

/** The handler users of the committed default configuration (the demo's example handlers). */
export const DEFAULT_HANDLERS = ["policy-guard", "redaction-check", "ci-evaluator", "observer"] as const;
/** The remote tool providers of the committed default configuration. */
export const DEFAULT_TOOL_PROVIDERS = [] as const;

/** The hooks the policy-guard serves and its handler name (DESIGN section 17). */
const POLICY_GUARD_HOOKS = ["PreToolUse", "PermissionRequest", "UserPromptSubmit", "PostToolUse"] as const;
const POLICY_HANDLER = "policy";

const SHARED_INBOX = "_INBOX";
const API = "$JS.API";

/** `GEODE_NATS_PASS_<USER>`: upper case, every other character than A-Z and 0-9 becomes `_`. */
export function passwordEnvVar(user: string): string {
  return `GEODE_NATS_PASS_${user.toUpperCase().replace(/[^A-Z0-9]/g, "_")}`;
}

/** The private inbox prefix of a user with one (`_INBOX_<user>`). */
export function privateInboxPrefix(user: string): string {
  return `_INBOX_${user}`;
}

/** Account-level JetStream facts every JetStream client may ask (read-only). */
const jsInfo = [`${API}.INFO`, `${API}.STREAM.NAMES`];

/** Look up a stream and create it when absent (every component provisions the streams and buckets it uses). */
const provisionStream = (stream: string) => [
  `${API}.STREAM.INFO.${stream}`,
  `${API}.STREAM.CREATE.${stream}`,
];

/** Read a stream: get messages, create/inspect/delete consumers (durable, ephemeral, ordered), ack, pull. */
const readStream = (stream: string) => [
  `${API}.STREAM.INFO.${stream}`,
  `${API}.STREAM.MSG.GET.${stream}`,
  `${API}.DIRECT.GET.${stream}`,
  `${API}.DIRECT.GET.${stream}.>`,
  `${API}.CONSUMER.CREATE.${stream}`,
  `${API}.CONSUMER.CREATE.${stream}.>`,
  `${API}.CONSUMER.DURABLE.CREATE.${stream}.>`,
  `${API}.CONSUMER.INFO.${stream}.>`,
  `${API}.CONSUMER.DELETE.${stream}.>`,
  `${API}.CONSUMER.MSG.NEXT.${stream}.>`,
  `$JS.ACK.${stream}.>`,
  `$JS.FC.${stream}.>`,
];

/** Read a KV bucket: get, history, keys and watch (ordered consumers on `KV_<bucket>`). */
const readBucket = (bucket: string) => readStream(`KV_${bucket}`);
/** Create the bucket when absent. */
const provisionBucket = (bucket: string) => provisionStream(`KV_${bucket}`);
/** Put, create, update, delete and purge keys matching `keys` (a KV write is a publish on `$KV.<bucket>.<key>`). */
const writeBucket = (bucket: string, keys = ">") => [`$KV.${bucket}.${keys}`];

/** Publish runtime events and timeline records to their streams (and create those when absent). */
const emitEvents = (n: Names) => [
  n.eventsAll,
  n.timelineAll,
  ...provisionStream(n.eventsStream),
  ...provisionStream(n.timelineStream),
];

/** Keep session and run records (the runtime, and the agent gateway for the agents it fronts). */
const ownSessionsAndRuns = (n: Names) => [
  ...readBucket(n.buckets.sessions),
  ...provisionBucket(n.buckets.sessions),
  ...writeBucket(n.buckets.sessions),
  ...readBucket(n.buckets.runs),
  ...provisionBucket(n.buckets.runs),
  ...writeBucket(n.buckets.runs),
];

/**
 * Add objects to `{ns}_results` as `writer`: its own chunk subjects (one more token per object)
 * and meta subjects. NATS has no partial-token wildcards, so the meta subjects of all objects are
 * open to every writer; object names are unguessable and writers may not read the bucket, and a
 * reader checks an object against its reference (writer, size, sha256) before trusting it.
 */
const writeResults = (n: Names, writer: Parameters<typeof resultChunkPrefix>[1]) => [
  `${resultChunkPrefix(n, writer)}.*`,
  `$O.${n.resultStore}.M.*`,
];

const uniq = (xs: string[]) => [...new Set(xs)];

function user(
  name: string,
  role: NatsRole,
  p: {
    publish: string[];
    publishDeny?: string[];
    subscribe: string[];
    allowResponses?: boolean;
    privateInbox?: boolean;
  },
): NatsUser {
  const inboxPrefix = p.privateInbox ? privateInboxPrefix(name) : SHARED_INBOX;
  return {
    user: name,
    role,
    passwordEnv: passwordEnvVar(name),
    inboxPrefix,
    permissions: {
      publish: uniq(p.publish),
      publishDeny: uniq(p.publishDeny ?? []),
      subscribe: uniq([...p.subscribe, `${inboxPrefix}.>`]),
      allowResponses: p.allowResponses ?? false,
    },
  };
}

const HANDLER_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const TOOL_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

/** Every user of a deployment with its permissions. Throws on a bad or colliding name. */
export function natsUsers(options: NatsRolesOptions = {}): NatsUser[] {
  const n = buildNames(options.namespace ?? DEFAULT_NAMESPACE);
  const b = n.buckets;
  const users: NatsUser[] = [
    // The agent runtime (SDK): invokes hooks, executes tools, verifies, publishes its events and
    // timeline, owns sessions and runs. It reads tool definitions and receipts (its tool client's
    // wait follows a tool's limit, and a wait that runs out is answered from the receipt) and
    // large results, but cannot write receipts, results, registrations or the tool registry.
    user("runtime", "runtime", {
      publish: [
        n.hookInvokeAll,
        n.hookCancelAll,
        n.toolExecute,
        n.verifyFinalize,
        n.verifyResolve,
        `${n.ns}.health.>`,
        ...jsInfo,
        ...emitEvents(n),
        ...ownSessionsAndRuns(n),
        ...readBucket(b.tools),
        ...readBucket(b.toolReceipts),
        ...readStream(n.resultStream),
      ],
      subscribe: [],
    }),
    // The dispatcher calls every handler and decides every outcome, so serving the webhook handlers
    // (read from `{ns}_webhooks`, never written: their handler subjects and their registrations'
    // heartbeats) gives it no power it lacks in substance; the HTTP-facing gateway has none of it.
    user("hook-dispatcher", "hook-dispatcher", {
      publish: [
        n.hookHandlerAll,
        n.health("hook-dispatcher"),
        ...jsInfo,
        ...emitEvents(n),
        ...readBucket(b.hookHandlers),
        ...provisionBucket(b.hookHandlers),
        ...writeBucket(b.hookHandlers),
        ...readBucket(b.webhooks),
        ...provisionBucket(b.webhooks),
      ],
      subscribe: [n.hookInvokeAll, n.hookCancelAll, n.hookHandlerAll, n.health("hook-dispatcher")],
      allowResponses: true,
    }),
    user("tool-executor", "tool-executor", {
      publish: [
        n.hookInvokeAll,
        n.hookCancelAll,
        n.approvalRequest,
        `${n.ns}.tool.terminal.>`,
        n.health("tool-executor"),
        ...jsInfo,
        ...emitEvents(n),
        ...readBucket(b.toolReceipts),
        ...provisionBucket(b.toolReceipts),
        ...writeBucket(b.toolReceipts),
        ...readBucket(b.tools),
        ...provisionBucket(b.tools),
        // Large results: it creates the bucket, reads providers' results, writes its own.
        ...provisionStream(n.resultStream),
        ...readStream(n.resultStream),
        ...writeResults(n, "tool-executor"),
      ],
      subscribe: [n.toolExecute, n.health("tool-executor")],
      allowResponses: true,
    }),
    user("verifier", "verifier", {
      publish: [
        n.hookInvokeAll,
        n.hookCancelAll,
        n.health("verifier"),
        ...jsInfo,
        ...emitEvents(n),
        ...readBucket(b.verify),
        ...provisionBucket(b.verify),
        ...writeBucket(b.verify),
        ...readBucket(b.sessions),
        ...provisionBucket(b.sessions),
        ...writeBucket(b.sessions),
        // Its durable consumers of session.ended / subagent.stopped: it clears its own state.
        ...readStream(n.timelineStream),
      ],
      subscribe: [n.verifyFinalize, n.verifyResolve, n.health("verifier")],
      allowResponses: true,
    }),
    // The recorder only reads: both streams through durable and ordered consumers, and the runs.
    user("activity-recorder", "activity-recorder", {
      publish: [
        n.health("activity-recorder"),
        ...jsInfo,
        ...provisionStream(n.eventsStream),
        ...provisionStream(n.timelineStream),
        ...readStream(n.eventsStream),
        ...readStream(n.timelineStream),
        ...readBucket(b.runs),
        ...provisionBucket(b.runs),
      ],
      subscribe: [n.health("activity-recorder")],
      allowResponses: true,
    }),
    // The agent gateway plays the runtime for agents with hook systems of their own: it invokes
    // hooks, verifies, asks approvers, publishes its sessions' events and timeline, keeps their
    // session and run records, and reads (never writes) the agents bucket. As the MCP server of
    // `POST /v1/mcp` it executes tools through the executor, reads the tool registry, the MCP
    // server records and large results, and asks the mcp-bridge for resources and prompts. It
    // faces HTTP, so it may neither serve a handler subject nor touch a registration, a webhook's
    // secret, a tool definition or a server record.
    user("agent-gateway", "agent-gateway", {
      publish: [
        n.hookInvokeAll,
        n.hookCancelAll,
        n.verifyFinalize,
        n.approvalRequest,
        n.toolExecute,
        n.mcpForward("*"),
        n.health("agent-gateway"),
        ...jsInfo,
        ...emitEvents(n),
        ...ownSessionsAndRuns(n),
        ...readBucket(b.agents),
        ...provisionBucket(b.agents),
        ...readBucket(b.tools),
        ...provisionBucket(b.tools),
        ...readBucket(b.mcpServers),
        ...provisionBucket(b.mcpServers),
        ...readStream(n.resultStream),
        // As the LLM gateway it reads providers, prices and budgets, and keeps the spend counters.
        ...readBucket(b.llmProviders),
        ...provisionBucket(b.llmProviders),
        ...readBucket(b.llmPrices),
        ...provisionBucket(b.llmPrices),
        ...readBucket(b.budgets),
        ...provisionBucket(b.budgets),
        ...readBucket(b.llmSpend),
        ...provisionBucket(b.llmSpend),
        ...writeBucket(b.llmSpend),
      ],
      subscribe: [n.health("agent-gateway")],
      allowResponses: true,
    }),
    // The policy-guard is the hook handler `policy` of its four hooks: it serves their handler
    // subjects (and probes them, the replica check on close), keeps its own registrations, reads
    // the policy sets, the agents (groups), the session records (whose agent a session is) and the
    // tool definitions (which tools are MCP tools, with their annotations). It publishes no event,
    // executes no tool and answers no approval.
    user("policy-guard", "policy-guard", {
      publish: [
        ...POLICY_GUARD_HOOKS.map((h) => n.hookHandler(h, POLICY_HANDLER)),
        n.health("policy-guard"),
        ...jsInfo,
        ...readBucket(b.hookHandlers),
        ...provisionBucket(b.hookHandlers),
        ...POLICY_GUARD_HOOKS.flatMap((h) => writeBucket(b.hookHandlers, n.handlerKey(h, POLICY_HANDLER))),
        ...readBucket(b.policies),
        ...provisionBucket(b.policies),
        ...readBucket(b.agents),
        ...provisionBucket(b.agents),
        ...readBucket(b.sessions),
        ...provisionBucket(b.sessions),
        ...readBucket(b.tools),
        ...provisionBucket(b.tools),
      ],
      subscribe: [
        ...POLICY_GUARD_HOOKS.map((h) => n.hookHandler(h, POLICY_HANDLER)),
        n.health("policy-guard"),
      ],
      allowResponses: true,
    }),
    // The notary reads both streams (ordered consumers), keeps its lease, publishes gaps and the
    // signed checkpoints (their stream too). It is the only user that may publish a checkpoint;
    // its key is a file of its own, which no NATS permission reaches.
    user("notary", "notary", {
      publish: [
        n.auditCheckpointAll,
        n.auditGapAll,
        n.health("notary"),
        ...jsInfo,
        ...provisionStream(n.eventsStream),
        ...provisionStream(n.timelineStream),
        ...readStream(n.eventsStream),
        ...readStream(n.timelineStream),
        ...provisionStream(n.checkpointsStream),
        ...readBucket(b.notary),
        ...provisionBucket(b.notary),
        ...writeBucket(b.notary),
      ],
      subscribe: [n.health("notary")],
      allowResponses: true,
    }),
    // The mcp-bridge registers each upstream MCP server's tools and serves their terminals, so it
    // writes the whole tool registry and serves every terminal subject (tool names come from the
    // servers' records, unknown when this file is generated), and writes large results as any of
    // those tools: powers a tool provider has for its own tool. It reads the server records
    // (never writes one), serves the agent-gateway's forward of resources and prompts, and
    // publishes its two events. It invokes no hook, executes no tool, answers no approval.
    user("mcp-bridge", "mcp-bridge", {
      publish: [
        n.event("mcp_server_connected"),
        n.event("mcp_server_failed"),
        n.health("mcp-bridge"),
        ...jsInfo,
        ...provisionStream(n.eventsStream),
        ...provisionStream(n.timelineStream),
        ...readBucket(b.tools),
        ...provisionBucket(b.tools),
        ...writeBucket(b.tools),
        ...readBucket(b.mcpServers),
        ...provisionBucket(b.mcpServers),
        `$O.${n.resultStore}.C.tool.*.*`,
        `$O.${n.resultStore}.M.*`,
      ],
      subscribe: [`${n.ns}.tool.terminal.>`, n.mcpForward("*"), n.health("mcp-bridge")],
      allowResponses: true,
    }),
    // Approvers answer `{ns}.approval.request` (queue group `approvers`) and nothing else.
    user("approver", "approver", {
      publish: [],
      subscribe: [n.approvalRequest],
      allowResponses: true,
      privateInbox: true,
    }),
    // Operators run the CLI (replay, prune, receipts resolve, handlers rm, events tail, health),
    // everything but signing: a checkpoint comes from the notary alone.
    user("operator", "operator", {
      publish: [">"],
      publishDeny: [n.auditCheckpointAll],
      subscribe: [">"],
      allowResponses: true,
    }),
  ];

  for (const h of options.handlers ?? []) {
    if (!HANDLER_NAME.test(h)) throw new Error(`handler name must match [A-Za-z0-9_-]{1,64}: ${h}`);
    const own = `${n.ns}.hook.handler.*.${h}`;
    users.push(
      // A handler serves its own subjects (every hook, queue group = its name) and keeps its own
      // registration `{HookName}.{handler}`; it may read the registry (replica check) and probe its
      // own subject (the SDK asks whether another replica still serves before deleting the key).
      user(`handler-${h}`, "handler", {
        publish: [
          own,
          ...jsInfo,
          ...readBucket(b.hookHandlers),
          ...provisionBucket(b.hookHandlers),
          ...writeBucket(b.hookHandlers, `*.${h}`),
        ],
        subscribe: [own],
        allowResponses: true,
        privateInbox: true,
      }),
    );
  }
  for (const t of options.toolProviders ?? []) {
    if (!TOOL_NAME.test(t)) throw new Error(`tool name must match [A-Za-z0-9_.-]{1,64}: ${t}`);
    users.push(
      // A remote tool provider serves its terminal subject, keeps its own tool definition and
      // writes its own large results (never reads the bucket).
      user(`tool-${t}`, "tool-provider", {
        publish: [
          ...jsInfo,
          ...readBucket(b.tools),
          ...provisionBucket(b.tools),
          ...writeBucket(b.tools, t),
          ...writeResults(n, { tool: t }),
        ],
        subscribe: [n.toolTerminal(t)],
        allowResponses: true,
        privateInbox: true,
      }),
    );
  }
  const seen = new Map<string, string>();
  for (const u of users) {
    const other = seen.get(u.passwordEnv);
    if (other !== undefined) throw new Error(`users ${other} and ${u.user} share ${u.passwordEnv}`);
    seen.set(u.passwordEnv, u.user);
  }
  return users;
}

const q = (s: string) => JSON.stringify(s);

function renderList(items: string[], indent: string): string {
  if (items.length === 0) return "[]";
  return `[\n${items.map((s) => `${indent}  ${q(s)}`).join("\n")}\n${indent}]`;
}

/**
 * The nats-server configuration: one account with JetStream and every user of `natsUsers`.
 * Listen address, port and store directory come from the command line (`-a`, `-p`, `-sd`), so one
 * file serves compose, a host install and the tests.
 */
export function renderNatsConfig(options: NatsRolesOptions = {}): string {
  const ns = options.namespace ?? DEFAULT_NAMESPACE;
  const account = options.account ?? "GEODE";
  const users = natsUsers(options);
  const lines: string[] = [
    "# GEODE per-role NATS users and permissions (docs/operations.md), for nats-server 2.9.",
    `# Generated for namespace "${ns}" by infra/nats/nats-roles.ts; regenerate instead of editing.`,
    "# Each password is read from the environment variable named after `$` (a missing one stops the",
    "# server); set it to a strong secret or a bcrypt hash. Permissions are allow lists: everything",
    "# not listed is denied.",
    "",
    "jetstream {}",
    "",
    "accounts {",
    `  ${account}: {`,
    "    jetstream: enabled",
    "    users: [",
  ];
  for (const u of users) {
    const i = "          ";
    lines.push(
      `      # ${u.role}${u.inboxPrefix !== SHARED_INBOX ? ` (connect with inboxPrefix "${u.inboxPrefix}")` : ""}`,
      "      {",
      `        user: ${q(u.user)}`,
      `        password: $${u.passwordEnv}`,
      "        permissions: {",
      u.permissions.publishDeny.length > 0
        ? `          publish: { allow: ${renderList(u.permissions.publish, i)}, deny: ${renderList(u.permissions.publishDeny, i)} }`
        : `          publish: { allow: ${renderList(u.permissions.publish, i)} }`,
      `          subscribe: { allow: ${renderList(u.permissions.subscribe, i)} }`,
      ...(u.permissions.allowResponses ? ["          allow_responses: true"] : []),
      "        }",
      "      }",
    );
  }
  lines.push("    ]", "  }", "}", "");
  return lines.join("\n");
}

/** The environment (variable → password) for `users`, from `password(user)`. */
export function passwordEnv(users: NatsUser[], password: (user: NatsUser) => string): Record<string, string> {
  return Object.fromEntries(users.map((u) => [u.passwordEnv, password(u)]));
}

function parseCliArgs(argv: string[]): NatsRolesOptions & { out?: string } {
  const opts: { namespace?: string; handlers: string[]; toolProviders: string[]; out?: string } = {
    handlers: [],
    toolProviders: [],
  };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = argv[i + 1];
    if (value === undefined) throw new Error(`${flag} needs a value`);
    i++;
    if (flag === "--namespace") opts.namespace = value;
    else if (flag === "--handler") opts.handlers.push(value);
    else if (flag === "--tool") opts.toolProviders.push(value);
    else if (flag === "--out") opts.out = value;
    else throw new Error(`unknown option ${flag}`);
  }
  return opts;
}

if (process.argv[1] && import.meta.filename === process.argv[1]) {
  const { writeFileSync } = await import("node:fs");
  const args = process.argv.slice(2);
  const opts =
    args.length === 0
      ? { handlers: [...DEFAULT_HANDLERS], toolProviders: [...DEFAULT_TOOL_PROVIDERS] }
      : parseCliArgs(args);
  const text = renderNatsConfig(opts);
  if ("out" in opts && opts.out) writeFileSync(opts.out, text);
  else process.stdout.write(text);
}
