import { randomUUID } from "node:crypto";
import { DEFAULT_AUDIT_KEY_FILE, type NoteSigner, readAuditKeyFile } from "@geode/audit";
import {
  ensureBucket,
  ensureCheckpointStream,
  ensureEventStreams,
  type Logger,
  type StreamOptions,
  silentLogger,
} from "@geode/bus";
import { AUDIT_LOGS, type AuditHealth, type Names } from "@geode/contracts";
import { openProjectionDb, type ProjectionDb, type RetryPolicy, redactDatabaseUrl } from "@geode/projection";
import { NO_OBSERVER, type ServiceHealth, type ServiceObserver } from "@geode/service";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { AuditStore, migrateAudit } from "./audit-store.js";
import { DbOutage } from "./db-outage.js";
import { LogFollower } from "./log-follower.js";
import { DEFAULT_AUDIT_BATCH_SIZE, DEFAULT_CHECKPOINT_MS, DEFAULT_LEASE_MS } from "./notary-config.js";
import { NotaryLease } from "./notary-lease.js";

export interface NotaryOptions {
  nc: NatsConnection;
  names: Names;
  log?: Logger;
  /** PostgreSQL URL; unset means the embedded PGlite under `pgliteDir` (as the recorder). */
  databaseUrl?: string | undefined;
  pgliteDir?: string;
  /** The signing key file (`GEODE_AUDIT_KEY_FILE`), read at start; or the signer itself. */
  keyFile?: string;
  signer?: NoteSigner;
  checkpointMs?: number;
  leaseMs?: number;
  batchSize?: number;
  /** This instance's name in the lease (default a random id). */
  instance?: string;
  retry?: RetryPolicy;
  streams?: StreamOptions;
  /** Where leaves, gaps and the checkpoints' age are reported (default: nowhere). */
  observer?: ServiceObserver;
}

export interface Notary {
  readonly instance: string;
  /** Its verifier key, in the note format (what `geode audit key` prints). */
  readonly verifierKey: string;
  /** Whether this instance holds the lease (the one that appends and signs). */
  readonly active: boolean;
  health(): ServiceHealth;
  stop(): Promise<void>;
}

/**
 * The notary (DESIGN section 20): a Merkle tree per stream and signed checkpoints, kept by one
 * active instance on a KV lease while the others stand by. The key is read first: a notary that
 * cannot sign does not start. A database that is down at start or later degrades it (health says
 * why) and it catches up by itself when the database is back.
 */
export async function startNotary(options: NotaryOptions): Promise<Notary> {
  const { nc, names: n } = options;
  const log = options.log ?? silentLogger();
  const signer = options.signer ?? readKey(options.keyFile ?? DEFAULT_AUDIT_KEY_FILE);
  const instance = options.instance ?? randomUUID();
  const observer = options.observer ?? NO_OBSERVER;
  await ensureEventStreams(nc, n, options.streams);
  await ensureCheckpointStream(nc, n, options.streams);
  const kv = await ensureBucket(nc, n, "notary");
  const db = await openAuditDb(options);
  const where = options.databaseUrl ? `PostgreSQL at ${redactDatabaseUrl(options.databaseUrl)}` : db.kind;
  const outage = new DbOutage(log, where);
  const store = new AuditStore(db.root, n.ns);
  const followers = await openFollowers(options, { store, signer, outage, log });
  let stopped = false;
  let migrated = false;
  // Role changes run one after another: a lease lost while the followers start waits for them.
  let role: Promise<void> = Promise.resolve();
  const lease = new NotaryLease(kv, {
    holder: instance,
    leaseMs: options.leaseMs ?? DEFAULT_LEASE_MS,
    log,
    onChange(active) {
      role = role.then(async () => {
        if (active && !stopped) {
          await migrateUntilDone();
          if (stopped || !lease.active) return;
          for (const f of followers) f.start();
        } else {
          await Promise.all(followers.map((f) => f.stop()));
        }
      });
    },
  });
  const migrateUntilDone = async () => {
    for (let attempt = 0; !migrated && !stopped; attempt++) {
      try {
        await migrateAudit(db.root, n.ns);
        migrated = true;
        outage.succeeded();
      } catch (err) {
        outage.failed(err);
        await new Promise((r) => setTimeout(r, Math.min(2_000, 100 * 2 ** attempt)));
      }
    }
  };
  observer.auditCheckpointAge(() =>
    lease.active
      ? followers.flatMap((f, i) => {
          const seconds = f.checkpointAgeSeconds();
          return seconds === undefined ? [] : [{ log: AUDIT_LOGS[i]!, seconds }];
        })
      : [],
  );
  const standbyView = refreshWhileStandby(
    followers,
    options.leaseMs ?? DEFAULT_LEASE_MS,
    () => !lease.active && !stopped,
  );
  lease.start();
  log.info({ instance, key: signer.verifierKey }, "notary started; taking the lease");
  return {
    instance,
    verifierKey: signer.verifierKey,
    get active() {
      return lease.active;
    },
    health: () =>
      notaryHealth(lease.active, followers, outage, options.checkpointMs ?? DEFAULT_CHECKPOINT_MS),
    async stop() {
      stopped = true;
      clearInterval(standbyView);
      observer.auditCheckpointAge(undefined);
      await lease.stop();
      await role;
      await Promise.all(followers.map((f) => f.stop()));
      await db.close();
    },
  };
}

/** The projection database the trees are kept in (migrated by the active instance, not here). */
function openAuditDb(options: NotaryOptions): Promise<ProjectionDb> {
  return openProjectionDb({
    ns: options.names.ns,
    databaseUrl: options.databaseUrl,
    poolSize: 4,
    migrate: false,
    command: "notary",
    ...(options.pgliteDir !== undefined ? { pgliteDir: options.pgliteDir } : {}),
  });
}

/** A standby's view of the logs, read from the database every third of the lease while `standby()`. */
function refreshWhileStandby(
  followers: LogFollower[],
  leaseMs: number,
  standby: () => boolean,
): NodeJS.Timeout {
  return setInterval(
    () => {
      if (!standby()) return;
      for (const f of followers) void f.refresh().catch(() => undefined);
    },
    Math.max(100, Math.floor(leaseMs / 3)),
  );
}

/** One follower per audit log, each keeping its stream's tree and checkpoints. */
async function openFollowers(
  options: NotaryOptions,
  parts: { store: AuditStore; signer: NoteSigner; outage: DbOutage; log: Logger },
): Promise<LogFollower[]> {
  const { nc, names: n } = options;
  const { store, signer, outage, log } = parts;
  const js = jetstream(nc);
  const jsm = await jetstreamManager(nc, { checkAPI: false });
  return AUDIT_LOGS.map(
    (l) =>
      new LogFollower({
        log: l,
        names: n,
        nc,
        js,
        jsm,
        store,
        signer,
        batchSize: options.batchSize ?? DEFAULT_AUDIT_BATCH_SIZE,
        checkpointMs: options.checkpointMs ?? DEFAULT_CHECKPOINT_MS,
        outage,
        ...(options.retry ? { retry: options.retry } : {}),
        observer: options.observer ?? NO_OBSERVER,
        logger: log.child({ audit_log: l }),
      }),
  );
}

/** Health: the logs' state; degraded while the active instance's database or a log has a problem. */
function notaryHealth(
  active: boolean,
  followers: LogFollower[],
  outage: DbOutage,
  checkpointMs: number,
): ServiceHealth {
  const audit: AuditHealth = { active, checkpoint_ms: checkpointMs, logs: followers.map((f) => f.state()) };
  const reason = outage.reason ?? followers.map((f) => f.problem).find((p) => p !== undefined);
  return reason === undefined || !active ? { status: "ok", audit } : { status: "degraded", reason, audit };
}

/** The signing key, or one line saying which file could not be used and how to get one. */
function readKey(file: string): NoteSigner {
  try {
    return readAuditKeyFile(file);
  } catch (err) {
    const why = (err as NodeJS.ErrnoException).code === "ENOENT" ? "does not exist" : (err as Error).message;
    throw Object.assign(
      new Error(`the audit key file ${file} (GEODE_AUDIT_KEY_FILE) cannot be used: ${why}`),
      {
        cause: err,
        hint: "`geode up` makes one when it is missing; in compose, `sh infra/docker/env.sh` writes it",
      },
    );
  }
}
