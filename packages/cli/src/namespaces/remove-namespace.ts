import { rmSync } from "node:fs";
import path from "node:path";
import { names as buildNames, SERVICE_NAMES } from "@geode/contracts";
import { dropProjection, type ProjectionDb, projectionNamespaces, projectionRunIds } from "@geode/projection";
import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { probeHealth } from "../up/health-probe.js";
import { natsNamespaces } from "./namespace-inventory.js";

const RUN_DIR_NAME = /^[A-Za-z0-9_.-]{1,128}$/;

/** What `removeNamespace` deleted (or, with `dryRun`, would delete). */
export interface NamespaceRemoval {
  ns: string;
  streams: string[];
  buckets: string[];
  /** Whether the Postgres schema `{ns}` (a projection) was dropped. */
  schema: boolean;
  /** Run folders under the runs directory. */
  runDirs: string[];
}

/** The services of `ns` that answer health now: a namespace in use is not removed. */
export async function liveServices(nc: NatsConnection, ns: string): Promise<string[]> {
  const n = buildNames(ns);
  const probes = await Promise.all(SERVICE_NAMES.map((s) => probeHealth(nc, n, s, 1_000)));
  return probes.filter((p) => p.status !== "down").map((p) => p.service);
}

/**
 * Deletes a namespace: its streams and KV buckets (exactly its own names, never another
 * namespace's that shares a prefix), its projection schema (only a schema that holds the
 * projection) and the run folders of its runs.
 */
export async function removeNamespace(options: {
  nc: NatsConnection;
  ns: string;
  db: ProjectionDb | undefined;
  runsDir: string;
  dryRun?: boolean;
}): Promise<NamespaceRemoval> {
  const { nc, ns, db } = options;
  const found = (await natsNamespaces(nc)).get(ns);
  const hasSchema = db !== undefined && (await projectionNamespaces(db.root)).has(ns);
  const runIds = hasSchema && db ? await projectionRunIds(db.root, ns) : [];
  // Only plain run ids name a folder of the runs directory (never `..` or a path).
  const runDirs = runIds
    .filter((id) => RUN_DIR_NAME.test(id) && id !== "." && id !== "..")
    .map((id) => path.resolve(options.runsDir, id));
  const removal: NamespaceRemoval = {
    ns,
    streams: found?.streams ?? [],
    buckets: found?.buckets ?? [],
    schema: hasSchema,
    runDirs,
  };
  if (options.dryRun) return removal;
  const jsm = await jetstreamManager(nc, { checkAPI: false });
  for (const stream of [...removal.streams, ...removal.buckets]) await jsm.streams.delete(stream);
  if (hasSchema && db) await dropProjection(db.root, ns);
  for (const dir of runDirs) rmSync(dir, { recursive: true, force: true });
  return removal;
}
