import { names as buildNames, NAMESPACE_PATTERN } from "@geode/contracts";
import type { ProjectionDb } from "@geode/projection";
import type { GeodeConfig } from "@geode/service";
import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { openExistingProjection } from "../projection-from-env.js";

/** The bucket names of a namespace without the `{ns}_` prefix: `hook_handlers`, `tool_receipts`, … */
const BUCKET_SUFFIXES: readonly string[] = Object.values(buildNames("x").buckets).map((b) => b.slice(2));
const STREAM_SUFFIXES = ["EVENTS", "TIMELINE", "CHECKPOINTS"] as const;

/** What one namespace holds in NATS and in the projection database. */
export interface NamespaceRow {
  ns: string;
  /**
   * Its JetStream streams (`{NS}_EVENTS`, `{NS}_TIMELINE`, `{NS}_CHECKPOINTS`) and buckets (KV `KV_{ns}_*`, Object
   * Store `OBJ_{ns}_results`) by name.
   */
  streams: string[];
  buckets: string[];
  /** The replica counts its streams and buckets have (one value unless an upgrade is under way). */
  replicas: number[];
  /** Messages and bytes stored in all of them. */
  messages: number;
  bytes: number;
  /** Rows of its `activity_events` in the projection; undefined when it has no schema there. */
  activityRows: number | undefined;
}

/** The suffix of the Object Store bucket of large results, `OBJ_{ns}_results`. */
const RESULTS_SUFFIX = buildNames("x").resultStore.slice(2);

/**
 * The namespace a JetStream stream belongs to, and whether it is a bucket (KV, or the Object Store
 * of large results); undefined for others.
 */
function streamNamespace(stream: string): { ns: string; bucket: boolean } | undefined {
  if (stream.startsWith("OBJ_") && stream.endsWith(`_${RESULTS_SUFFIX}`)) {
    const ns = stream.slice(4, -(RESULTS_SUFFIX.length + 1));
    return NAMESPACE_PATTERN.test(ns) ? { ns, bucket: true } : undefined;
  }
  if (stream.startsWith("KV_")) {
    for (const suffix of BUCKET_SUFFIXES) {
      const ns = stream.slice(3, -(suffix.length + 1));
      if (stream.endsWith(`_${suffix}`) && NAMESPACE_PATTERN.test(ns)) return { ns, bucket: true };
    }
    return undefined;
  }
  for (const suffix of STREAM_SUFFIXES) {
    const ns = stream.slice(0, -(suffix.length + 1)).toLowerCase();
    if (stream.endsWith(`_${suffix}`) && ns.toUpperCase() === stream.slice(0, -(suffix.length + 1)))
      if (NAMESPACE_PATTERN.test(ns)) return { ns, bucket: false };
  }
  return undefined;
}

function emptyRow(ns: string): NamespaceRow {
  return { ns, streams: [], buckets: [], replicas: [], messages: 0, bytes: 0, activityRows: undefined };
}

/** Every namespace with a stream or bucket in NATS, with what it stores. */
export async function natsNamespaces(nc: NatsConnection): Promise<Map<string, NamespaceRow>> {
  const rows = new Map<string, NamespaceRow>();
  const jsm = await jetstreamManager(nc, { checkAPI: false });
  for await (const si of jsm.streams.list()) {
    const owner = streamNamespace(si.config.name);
    if (!owner) continue;
    const row = rows.get(owner.ns) ?? emptyRow(owner.ns);
    (owner.bucket ? row.buckets : row.streams).push(si.config.name);
    const replicas = si.config.num_replicas || 1;
    if (!row.replicas.includes(replicas)) row.replicas = [...row.replicas, replicas].sort((a, b) => a - b);
    row.messages += si.state.messages;
    row.bytes += si.state.bytes;
    rows.set(owner.ns, row);
  }
  return rows;
}

/**
 * The projection database to look in: PostgreSQL at DATABASE_URL, or the embedded one of this
 * folder or of the running plane (through its owner); undefined when there is none (nothing is
 * created to look).
 */
export function openInventoryDb(
  config: GeodeConfig,
  command: string,
  env: Record<string, string | undefined>,
): Promise<ProjectionDb | undefined> {
  return openExistingProjection(config, command, { env, err: () => undefined }, false);
}

/** NATS and projection namespaces together, sorted by name. */
export function mergeNamespaces(
  nats: Map<string, NamespaceRow>,
  projection: Map<string, number>,
): NamespaceRow[] {
  const rows = new Map(nats);
  for (const [ns, count] of projection)
    rows.set(ns, { ...(rows.get(ns) ?? emptyRow(ns)), activityRows: count });
  return [...rows.values()].sort((a, b) => a.ns.localeCompare(b.ns));
}
