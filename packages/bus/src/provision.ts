import type { Names } from "@geode/contracts";
import {
  DiscardPolicy,
  JetStreamApiError,
  type JetStreamManager,
  jetstreamManager,
  StorageType,
} from "@nats-io/jetstream";
import { type KV, Kvm } from "@nats-io/kv";
import { type NatsConnection, nanos } from "@nats-io/transport-node";

export interface StreamOptions {
  /** Stream replicas (a NATS cluster runs 3). Default 1. */
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

function isNotFound(err: unknown): boolean {
  return err instanceof JetStreamApiError && (err.code === 10059 || err.status === 404);
}

async function ensureStream(
  jsm: JetStreamManager,
  name: string,
  subjects: string[],
  options: StreamOptions,
): Promise<void> {
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
      num_replicas: options.replicas ?? 1,
      max_age: nanos(options.maxAgeMs ?? STREAM_DEFAULTS.maxAgeMs),
      duplicate_window: nanos(options.duplicateWindowMs ?? STREAM_DEFAULTS.duplicateWindowMs),
      discard: DiscardPolicy.Old,
    });
  } catch (err) {
    // A concurrent creator won the race: fine, it exists now.
    if (err instanceof JetStreamApiError && err.code === 10058) return;
    throw err;
  }
}

/** Creates `{NS}_EVENTS` and `{NS}_TIMELINE` if absent (idempotent; never changes existing ones). */
export async function ensureEventStreams(
  nc: NatsConnection,
  n: Names,
  options: StreamOptions = {},
): Promise<void> {
  const jsm = await jetstreamManager(nc, { checkAPI: false });
  await ensureStream(jsm, n.eventsStream, [n.eventsAll], options);
  await ensureStream(jsm, n.timelineStream, [n.timelineAll], options);
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
};

/** Opens a KV bucket, creating it (file storage) if absent; never reconfigures an existing one. */
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
  return kvm.create(name, {
    history: BUCKET_HISTORY[bucket],
    replicas: options.replicas ?? 1,
    storage: StorageType.File,
  });
}

/** True when `err` is the compare-and-set conflict of a KV create/update (wrong last sequence). */
export function isRevisionConflict(err: unknown): boolean {
  return err instanceof JetStreamApiError && err.code === 10071;
}
