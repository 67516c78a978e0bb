import { type AgentRecord, sha256 } from "@geode/contracts";
import type { Plane } from "./plane.js";

const BEARER = /^Bearer[ \t]+([\x21-\x7e]{1,512})[ \t]*$/i;

/**
 * Who may call the gateway: a live copy of KV `{ns}_agents` indexed by token digest, so checking a
 * bearer token never waits on NATS. Tokens are compared only as SHA-256 digests.
 */
export class AgentDirectory {
  private readonly nameByDigest = new Map<string, string>();
  private readonly digestByName = new Map<string, string>();

  private constructor(private readonly follow: { stop(): void }) {}

  /** Loads every agent and follows changes (`geode agents add` / `rm` take effect within moments). */
  static async start(plane: Plane): Promise<AgentDirectory> {
    let directory: AgentDirectory | undefined;
    const pending: Array<[string, AgentRecord | null]> = [];
    const follow = await plane.followAgents((name, record) => {
      if (directory) directory.apply(name, record);
      else pending.push([name, record]);
    });
    directory = new AgentDirectory(follow);
    for (const [name, record] of pending) directory.apply(name, record);
    return directory;
  }

  /** The agent an `Authorization` header names, or null for a missing, malformed or unknown token. */
  identify(authorization: string | undefined): string | null {
    if (authorization === undefined) return null;
    const m = BEARER.exec(authorization);
    if (!m?.[1]) return null;
    return this.nameByDigest.get(sha256(m[1])) ?? null;
  }

  /** Number of agents known (health and tests). */
  size(): number {
    return this.digestByName.size;
  }

  stop(): void {
    this.follow.stop();
  }

  private apply(name: string, record: AgentRecord | null): void {
    const old = this.digestByName.get(name);
    if (old !== undefined) {
      this.digestByName.delete(name);
      if (this.nameByDigest.get(old) === name) this.nameByDigest.delete(old);
    }
    if (record) {
      this.digestByName.set(name, record.token_sha256);
      this.nameByDigest.set(record.token_sha256, name);
    }
  }
}
