import { parseArgs } from "node:util";
import { connectBus } from "@geode/bus";
import {
  type AddressKind,
  names as buildNames,
  checkWebhookUrl,
  FailureModeSchema,
  GeodeError,
  HANDLER_NAME_PATTERN,
  type HandlerRegistration,
  HandlerRegistrationSchema,
  isHookName,
  newWebhookSecret,
  SchemaVersion,
  TOOL_HOOKS,
  type WebhookRecord,
  WebhookRecordSchema,
  webhookRegistration,
} from "@geode/contracts";
import { loadConfig } from "@geode/service";
import { HandlerRegistrations, WebhookStore } from "@geode/state";
import { type CommandIO, type CommandModule, intOption, UsageError } from "../command.js";
import { renderTable } from "../render-table.js";

async function withRegistry<T>(
  io: CommandIO,
  client: string,
  body: (registry: HandlerRegistrations, webhooks: () => Promise<WebhookStore>) => Promise<T>,
): Promise<T | number> {
  const config = loadConfig(io.env);
  const n = buildNames(config.namespace);
  // A NATS that cannot be reached: one line and a hint, from the CLI (see runCli).
  const nc = await connectBus(config, client);
  try {
    const conn = { nc, names: n };
    return await body(await HandlerRegistrations.open(conn), () => WebhookStore.open(conn));
  } finally {
    await nc.close();
  }
}

/** "12.3s", or "expired 4.0s ago" for a registration past its lease. */
function leaseLeft(reg: HandlerRegistration, now = Date.now()): string {
  const left = reg.heartbeat_at + reg.lease_ms - now;
  const secs = (ms: number) => `${(ms / 1000).toFixed(1)}s`;
  return left >= 0 ? secs(left) : `expired ${secs(-left)} ago`;
}

/** The `handlers ls` table rows, in call order (hook, then priority, then name). */
function handlerRows(regs: HandlerRegistration[], now = Date.now()): string[][] {
  return [...regs]
    .sort((a, b) =>
      a.hook !== b.hook
        ? a.hook < b.hook
          ? -1
          : 1
        : a.priority - b.priority || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0),
    )
    .map((r) => [
      r.hook,
      r.name,
      String(r.priority),
      r.timeout_ms === 0 ? "none" : `${r.timeout_ms}ms`,
      r.schema_version.replace("geode.public-hook.", ""),
      r.failure_mode,
      r.match ? `tool_name: ${r.match.tool_name.join(", ")}` : "*",
      leaseLeft(r, now),
    ]);
}

export const handlersLsCommand: CommandModule = {
  async run(args, io) {
    const { values, positionals } = parseArgs({
      args,
      allowPositionals: true,
      options: { json: { type: "boolean", default: false } },
    });
    const [hook, ...rest] = positionals;
    if (rest.length > 0) throw new UsageError("give at most one hook name");
    if (hook !== undefined && !isHookName(hook)) throw new UsageError(`unknown hook: ${hook}`);
    return withRegistry(io, "geode-handlers", async (registry) => {
      const regs = await registry.list(hook, (key) => io.err(`skipping malformed registration ${key}\n`));
      if (values.json) {
        io.out(`${JSON.stringify(regs)}\n`);
        return 0;
      }
      if (regs.length === 0) {
        io.out(hook ? `no handlers registered for ${hook}\n` : "no hook handlers registered\n");
        return 0;
      }
      io.out(
        renderTable(
          ["hook", "name", "priority", "timeout", "version", "failure", "match", "lease left"],
          handlerRows(regs),
        ),
      );
      return 0;
    });
  },
};

export const handlersRmCommand: CommandModule = {
  async run(args, io) {
    const { positionals } = parseArgs({ args, allowPositionals: true, options: {} });
    const [hook, name, ...rest] = positionals;
    if (hook === undefined || name === undefined || rest.length > 0)
      throw new UsageError("give a hook name and a handler name");
    if (!isHookName(hook)) throw new UsageError(`unknown hook: ${hook}`);
    return withRegistry(io, "geode-handlers", async (registry, webhooks) => {
      const key = `${hook}.${name}`;
      // The webhook first, so that no dispatcher registers it again on its next heartbeat.
      const webhook = await (await webhooks()).remove(hook, name);
      const registration = await registry.remove(hook, name);
      if (!webhook && !registration) {
        io.err(`no registration ${key}\n`);
        return 1;
      }
      io.out(
        webhook
          ? `deleted webhook handler ${key} and its secret\n`
          : `deleted ${key} (a live replica registers itself again on its next heartbeat)\n`,
      );
      return 0;
    });
  },
};

/** The webhook record `handlers add` writes, from its options (refusals are UsageErrors). */
function webhookFromOptions(
  values: {
    hook?: string | undefined;
    name?: string | undefined;
    url?: string | undefined;
    priority?: string | undefined;
    "timeout-ms"?: string | undefined;
    "failure-mode"?: string | undefined;
    match?: string | undefined;
    "lease-ms"?: string | undefined;
    "schema-version"?: string | undefined;
  },
  secret: string,
  now = Date.now(),
): WebhookRecord {
  const { hook, name, url } = values;
  if (hook === undefined || name === undefined || url === undefined)
    throw new UsageError("--hook, --name and --url are required");
  if (!isHookName(hook)) throw new UsageError(`unknown hook: ${hook}`);
  if (!HANDLER_NAME_PATTERN.test(name)) throw new UsageError("handler names match [A-Za-z0-9_-]{1,64}");
  const failureMode = FailureModeSchema.safeParse(values["failure-mode"] ?? "open");
  if (!failureMode.success) throw new UsageError("--failure-mode must be open or closed");
  const match = values.match?.split(",").map((g) => g.trim());
  if (match && !TOOL_HOOKS.includes(hook))
    throw new UsageError(`--match is only for tool hooks (${TOOL_HOOKS.join(", ")})`);
  const version = values["schema-version"] ?? "v2";
  if (version !== "v1" && version !== "v2") throw new UsageError("--schema-version must be v1 or v2");
  const priority = values.priority === undefined ? 100 : Number(values.priority);
  if (!Number.isInteger(priority))
    throw new UsageError(`--priority must be an integer, got ${values.priority}`);
  const parsed = WebhookRecordSchema.safeParse({
    hook,
    name,
    url,
    secret,
    priority,
    timeout_ms: intOption(values["timeout-ms"], "timeout-ms", 0) ?? 10_000,
    schema_version: version === "v1" ? SchemaVersion.V1 : SchemaVersion.V2,
    failure_mode: failureMode.data,
    match: match ? { tool_name: match } : null,
    lease_ms: intOption(values["lease-ms"], "lease-ms", 1) ?? 15_000,
    created_at: now,
  });
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new UsageError(`${issue?.path.join(".") || "webhook"}: ${issue?.message}`);
  }
  return parsed.data;
}

/** What allows a refused webhook address, if anything does. */
function refusalHint(kind: AddressKind): string {
  return kind === "loopback" || kind === "private"
    ? `GEODE_WEBHOOK_ALLOW=${kind} allows it (for \`geode handlers add\` and the hook-dispatcher)`
    : "webhooks never reach link-local, metadata, unspecified, multicast or reserved addresses";
}

export const handlersAddCommand: CommandModule = {
  async run(args, io) {
    const { values, positionals } = parseArgs({
      args,
      allowPositionals: true,
      options: {
        hook: { type: "string" },
        name: { type: "string" },
        url: { type: "string" },
        priority: { type: "string" },
        "timeout-ms": { type: "string" },
        "failure-mode": { type: "string" },
        match: { type: "string" },
        "lease-ms": { type: "string" },
        "schema-version": { type: "string" },
      },
    });
    if (positionals.length > 0) throw new UsageError(`unexpected argument ${positionals[0]}`);
    const record = webhookFromOptions(values, newWebhookSecret());
    const key = `${record.hook}.${record.name}`;
    const target = await checkWebhookUrl(record.url, loadConfig(io.env).webhookAllow);
    if ("refused" in target) {
      io.err(`--url refused: ${target.refused}; ${refusalHint(target.kind)}\n`);
      return 2;
    }
    if (target.unresolved)
      io.err(`note: ${target.unresolved} does not resolve now; the dispatcher checks it at each call\n`);
    return withRegistry(io, "geode-handlers", async (registry, webhooks) => {
      const store = await webhooks();
      const live = (await registry.list(record.hook)).find((r) => r.name === record.name);
      if (live && (live.failure_mode === "closed" || live.heartbeat_at + live.lease_ms >= Date.now())) {
        io.err(`${key} is already registered (geode handlers rm ${record.hook} ${record.name} first)\n`);
        return 1;
      }
      if (!(await store.add(record))) {
        io.err(`webhook ${key} already exists (geode handlers rm ${record.hook} ${record.name} first)\n`);
        return 1;
      }
      // Registered at once, so a closed guard is in force before any dispatcher serves it (until
      // one does, its calls fail closed); the dispatchers keep the heartbeat from then on.
      try {
        await registry.register(HandlerRegistrationSchema.parse(webhookRegistration(record)));
      } catch (err) {
        await store.remove(record.hook, record.name).catch(() => false);
        io.err(`${err instanceof GeodeError ? err.message : String(err)}\n`);
        return 1;
      }
      io.out(
        `registered webhook handler ${key} -> ${record.url} (${record.failure_mode}, priority ${record.priority}, timeout ${record.timeout_ms} ms)\n` +
          `the hook-dispatcher POSTs each envelope signed: Geode-Timestamp, Geode-Delivery and Geode-Signature: sha256=HMAC-SHA256(secret, "<timestamp>.<delivery>.<body>")\n` +
          "its secret, shown once:\n" +
          `${record.secret}\n`,
      );
      return 0;
    });
  },
};
