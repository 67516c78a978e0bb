import type { Names } from "@geode/contracts";
import { ConfigError } from "@geode/env";
import {
  type ConsumerConfig,
  type ConsumerInfo,
  DiscardPolicy,
  JetStreamApiError,
  type JetStreamManager,
  jetstreamManager,
  StorageType,
} from "@nats-io/jetstream";
import { type KV, Kvm } from "@nats-io/kv";
import { type NatsConnection, nanos } from "@nats-io/transport-node";
import { NATS_ENV } from "./nats-config.js";

export interface StreamOptions {
  /** Stream replicas (a NATS cluster runs 3). Default `GEODE_STREAM_REPLICAS`, else 1. */
  replicas?: number;
  /** Max age of a message in ms; 0 keeps messages until removed by limits. Default 180 days. */
  maxAgeMs?: number;
  /** Window within which a repeated `Nats-Msg-Id` is dropped. Default 2 minutes. */
  duplicateWindowMs?: number;
}

const DAY_MS = 86_400_000;

/** What a component creates a stream with when it is absent (file storage, old messages discarded). */
export const STREAM_DEFAULTS = {
  maxAgeMs: 180 * DAY_MS,
  duplicateWindowMs: 120_000,
} as const;

/**
 * The replica count of what this process creates: `GEODE_STREAM_REPLICAS` (1, 3 or 5; default 1).
 * Every provisioning helper falls back to it, so every component, the SDK and the CLI create
 * streams, buckets and durable consumers alike. A bad value throws ConfigError naming it.
 */
export function configuredReplicas(env: NodeJS.ProcessEnv = process.env): number {
  return NATS_ENV.parse({ GEODE_STREAM_REPLICAS: env["GEODE_STREAM_REPLICAS"] }).streamReplicas;
}

/**
 * The size of the cluster as this connection sees it: the servers the connected one advertises
 * (`connect_urls`, the nodes it has routes to, itself included) or, when more, the distinct servers
 * of `natsUrl`. A server that is not clustered is one node.
 */
export function clusterSize(nc: NatsConnection, natsUrl?: string): number {
  const info = nc.info;
  if (!info?.cluster) return 1;
  const advertised = new Set(info.connect_urls ?? []).size;
  const listed =
    natsUrl === undefined
      ? 0
      : new Set(
          natsUrl
            .split(",")
            .map((s) => s.trim())
            .filter(Boolean),
        ).size;
  return Math.max(1, advertised, listed);
}

/** The one-line refusal of a replica count the cluster cannot hold. */
function replicaRefusal(replicas: number, size: number, clusterName: string | undefined): string {
  const where = clusterName
    ? `the NATS cluster "${clusterName}" has ${size} node${size === 1 ? "" : "s"}`
    : "the NATS server is not clustered (1 node)";
  return `GEODE_STREAM_REPLICAS=${replicas} cannot be placed: ${where}; a stream needs one node per replica (use ${size >= 5 ? "1, 3 or 5" : size >= 3 ? "1 or 3" : "1"})`;
}

/**
 * Refuses (ConfigError) a replica count larger than the cluster this connection reaches. Services
 * call it at start-up; a count the servers still refuse at creation gets the same message.
 */
export function assertReplicasFit(nc: NatsConnection, replicas: number, natsUrl?: string): void {
  const size = clusterSize(nc, natsUrl);
  if (replicas > size) throw new ConfigError(replicaRefusal(replicas, size, nc.info?.cluster));
}

/** The server's "cannot place that many replicas" answers, as the refusal above. */
function placementError(err: unknown, replicas: number, nc: NatsConnection): unknown {
  if (replicas <= 1 || !(err instanceof JetStreamApiError)) return err;
  // 10005 no suitable peers for placement; 10074 replicas > 1 not supported in non-clustered mode;
  // 10023 insufficient resources.
  if (![10005, 10074, 10023].includes(err.code)) return err;
  return new ConfigError(
    `${replicaRefusal(replicas, clusterSize(nc), nc.info?.cluster)} (server: ${err.message})`,
  );
}

function isNotFound(err: unknown): boolean {
  return err instanceof JetStreamApiError && (err.code === 10059 || err.status === 404);
}

async function ensureStream(
  nc: NatsConnection,
  jsm: JetStreamManager,
  name: string,
  subjects: string[],
  options: StreamOptions,
): Promise<void> {
  const replicas = options.replicas ?? configuredReplicas();
  try {
    await jsm.streams.info(name);
    return; // never reconfigure what exists
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
  try {
    await jsm.streams.add({
      name,
      subjects,
      storage: StorageType.File,
      num_replicas: replicas,
      max_age: nanos(options.maxAgeMs ?? STREAM_DEFAULTS.maxAgeMs),
      duplicate_window: nanos(options.duplicateWindowMs ?? STREAM_DEFAULTS.duplicateWindowMs),
      discard: DiscardPolicy.Old,
    });
  } catch (err) {
    // A concurrent creator won the race: fine, it exists now.
    if (err instanceof JetStreamApiError && err.code === 10058) return;
    throw placementError(err, replicas, nc);
  }
}

/** Creates `{NS}_EVENTS` and `{NS}_TIMELINE` if absent (idempotent; never changes existing ones). */
export async function ensureEventStreams(
  nc: NatsConnection,
  n: Names,
  options: StreamOptions = {},
): Promise<void> {
  const jsm = await jetstreamManager(nc, { checkAPI: false });
  await ensureStream(nc, jsm, n.eventsStream, [n.eventsAll], options);
  await ensureStream(nc, jsm, n.timelineStream, [n.timelineAll], options);
}

/**
 * Creates `{NS}_CHECKPOINTS` if absent: the notary's signed checkpoints on
 * `{ns}.audit.checkpoint.>`, every one kept (no age limit, no per-subject limit: a checkpoint is
 * a few hundred bytes and an auditor checks each against the one before). Never changes an
 * existing one.
 */
export async function ensureCheckpointStream(
  nc: NatsConnection,
  n: Names,
  options: Omit<StreamOptions, "maxAgeMs"> = {},
): Promise<void> {
  const jsm = await jetstreamManager(nc, { checkAPI: false });
  await ensureStream(nc, jsm, n.checkpointsStream, [n.auditCheckpointAll], { ...options, maxAgeMs: 0 });
}

export type BucketName = keyof Names["buckets"];

/** History kept per bucket: receipts, verify and sessions keep a short audit trail of revisions. */
export const BUCKET_HISTORY: Readonly<Record<BucketName, number>> = {
  hookHandlers: 1,
  toolReceipts: 5,
  verify: 5,
  sessions: 5,
  runs: 1,
  tools: 1,
  agents: 1,
  webhooks: 1,
  policies: 5,
  mcpServers: 1,
  notary: 1,
  llmProviders: 1,
  llmPrices: 1,
  budgets: 1,
  llmSpend: 1,
};

/**
 * Opens a KV bucket, creating it (file storage; `replicas` default `GEODE_STREAM_REPLICAS`) if
 * absent; never reconfigures an existing one.
 */
export async function ensureBucket(
  nc: NatsConnection,
  n: Names,
  bucket: BucketName,
  options: { replicas?: number } = {},
): Promise<KV> {
  const kvm = new Kvm(nc);
  const name = n.buckets[bucket];
  const jsm = await jetstreamManager(nc, { checkAPI: false });
  try {
    await jsm.streams.info(`KV_${name}`);
    return await kvm.open(name);
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
  const replicas = options.replicas ?? configuredReplicas();
  try {
    return await kvm.create(name, { history: BUCKET_HISTORY[bucket], replicas, storage: StorageType.File });
  } catch (err) {
    throw placementError(err, replicas, nc);
  }
}

/**
 * Creates or updates a durable consumer with `replicas` (default `GEODE_STREAM_REPLICAS`), never
 * more than its stream has: a consumer cannot outnumber its stream, so on a stream still at fewer
 * replicas (an R1 deployment being upgraded) it takes the stream's count, and the next start after
 * the stream was raised raises the consumer too.
 */
export async function ensureDurableConsumer(
  jsm: JetStreamManager,
  stream: string,
  config: Partial<ConsumerConfig> & { durable_name: string },
  options: { replicas?: number } = {},
): Promise<ConsumerInfo> {
  const wanted = options.replicas ?? configuredReplicas();
  const streamReplicas = (await jsm.streams.info(stream)).config.num_replicas ?? 1;
  return jsm.consumers.add(stream, {
    ...config,
    num_replicas: Math.min(wanted, Math.max(1, streamReplicas)),
  });
}

/** What the tool-executor creates `{ns}_results` with when it is absent (docs/operations.md). */
export const RESULT_STORE_DEFAULTS = {
  /** How long a stored result is kept: 7 days, then a reference to it no longer resolves. */
  ttlMs: 7 * DAY_MS,
  /** The bucket's size; a full bucket refuses new results and keeps the stored ones. */
  maxBytes: 1024 * 1024 * 1024,
} as const;

/**
 * Creates the Object Store bucket `{ns}_results` (stream `OBJ_{ns}_results`) if absent, with the
 * configuration every Object Store client reads (chunks under `$O.{bucket}.C.>`, metadata under
 * `$O.{bucket}.M.>`), file storage, `replicas` (default `GEODE_STREAM_REPLICAS`), a TTL and a size
 * limit. Rollup headers are off: a writer may only add objects, never wipe the bucket with
 * `Nats-Rollup: all`. Never reconfigures an existing bucket.
 */
export async function ensureResultStore(
  nc: NatsConnection,
  n: Names,
  options: { replicas?: number; ttlMs?: number; maxBytes?: number } = {},
): Promise<void> {
  const jsm = await jetstreamManager(nc, { checkAPI: false });
  try {
    await jsm.streams.info(n.resultStream);
    return;
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
  const replicas = options.replicas ?? configuredReplicas();
  const ttlMs = options.ttlMs ?? RESULT_STORE_DEFAULTS.ttlMs;
  try {
    await jsm.streams.add({
      name: n.resultStream,
      subjects: [`$O.${n.resultStore}.C.>`, `$O.${n.resultStore}.M.>`],
      storage: StorageType.File,
      num_replicas: replicas,
      max_age: nanos(ttlMs),
      duplicate_window: nanos(Math.min(ttlMs, STREAM_DEFAULTS.duplicateWindowMs)),
      max_bytes: options.maxBytes ?? RESULT_STORE_DEFAULTS.maxBytes,
      discard: DiscardPolicy.New,
      allow_direct: true,
      allow_rollup_hdrs: false,
      description: "GEODE large tool results (docs/protocol.md#large-results)",
    });
  } catch (err) {
    if (err instanceof JetStreamApiError && err.code === 10058) return;
    throw placementError(err, replicas, nc);
  }
}

/** True when `err` is the compare-and-set conflict of a KV create/update (wrong last sequence). */
export function isRevisionConflict(err: unknown): boolean {
  return err instanceof JetStreamApiError && err.code === 10071;
}
