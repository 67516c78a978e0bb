import { type AgentRecord, sha256 } from "@geode/contracts";
import type { Plane } from "./plane.js";

const BEARER = /^Bearer[ \t]+([\x21-\x7e]{1,512})[ \t]*$/i;

/** How often the directory re-reads the whole bucket besides following it (the bound on a stale entry). */
const AGENT_RESYNC_MS = 30_000;

/**
 * Who may call the gateway: a live copy of KV `{ns}_agents` indexed by token digest, so checking a
 * bearer token never waits on NATS. Tokens are compared only as SHA-256 digests. A KV watch applies
 * `geode agents add` / `rm` as soon as NATS delivers them; re-reading the bucket every
 * `resyncMs` bounds how long a removed token can keep working should a watch ever stall.
 */
export class AgentDirectory {
  private nameByDigest = new Map<string, string>();
  private digestByName = new Map<string, string>();
  private groupsByName = new Map<string, readonly string[]>();
  /** Counts the watch's changes, so a re-read that overlapped one is not applied over it. */
  private changes = 0;
  private follow: { stop(): void } | undefined;
  private resync: ReturnType<typeof setInterval> | undefined;

  private constructor(private readonly plane: Plane) {}

  /** Loads every agent, follows changes, and re-reads the bucket every `resyncMs`. */
  static async start(plane: Plane, options: { resyncMs?: number } = {}): Promise<AgentDirectory> {
    const directory = new AgentDirectory(plane);
    directory.follow = await plane.followAgents((name, record) => directory.apply(name, record));
    directory.resync = setInterval(() => void directory.reread(), options.resyncMs ?? AGENT_RESYNC_MS);
    directory.resync.unref?.();
    return directory;
  }

  /** The agent an `Authorization` header names, or null for a missing, malformed or unknown token. */
  identify(authorization: string | undefined): string | null {
    if (authorization === undefined) return null;
    const m = BEARER.exec(authorization);
    if (!m?.[1]) return null;
    return this.nameByDigest.get(sha256(m[1])) ?? null;
  }

  /** The groups of an agent (`geode agents add NAME --group G`); undefined when it has none. */
  groupsOf(name: string): readonly string[] | undefined {
    return this.groupsByName.get(name);
  }

  /** Number of agents known (health and tests). */
  size(): number {
    return this.digestByName.size;
  }

  stop(): void {
    clearInterval(this.resync);
    this.follow?.stop();
  }

  private apply(name: string, record: AgentRecord | null): void {
    this.changes++;
    const old = this.digestByName.get(name);
    if (old !== undefined) {
      this.digestByName.delete(name);
      if (this.nameByDigest.get(old) === name) this.nameByDigest.delete(old);
    }
    this.groupsByName.delete(name);
    if (record) {
      if (record.groups) this.groupsByName.set(name, record.groups);
      this.digestByName.set(name, record.token_sha256);
      this.nameByDigest.set(record.token_sha256, name);
    }
  }

  /** Replaces the copy by the bucket as it is now, unless the watch changed it meanwhile. */
  private async reread(): Promise<void> {
    const before = this.changes;
    const agents = await this.plane.listAgents().catch(() => null);
    if (agents === null || this.changes !== before) return;
    this.digestByName = new Map(agents.map((a) => [a.name, a.token_sha256]));
    this.nameByDigest = new Map(agents.map((a) => [a.token_sha256, a.name]));
    this.groupsByName = new Map(agents.flatMap((a) => (a.groups ? [[a.name, a.groups] as const] : [])));
  }
}
