import type { GeodeConnection } from "@geode/bus";
import {
  AGENT_NAME_PATTERN,
  type AgentRecord,
  AgentRecordSchema,
  ErrorCode,
  GeodeError,
} from "@geode/contracts";
import { KvRecords, type RecordChange, type RecordWatch } from "./kv-records.js";

function check(name: string): void {
  if (!AGENT_NAME_PATTERN.test(name))
    throw new GeodeError(
      ErrorCode.InvalidRequest,
      `agent names match [a-z0-9][a-z0-9_-]{0,63}, got ${JSON.stringify(name.slice(0, 80))}`,
    );
}

/**
 * The agents of the agent gateway, KV `{ns}_agents`, key = agent name, value `{name, token_sha256,
 * created_at, groups?}`: a token itself is never stored. Owners: operators write (`geode agents
 * add`, `geode agents rm`); the agent gateway and the policy-guard only read.
 */
export class AgentStore {
  private constructor(private readonly records: KvRecords<AgentRecord>) {}

  static async open(conn: GeodeConnection): Promise<AgentStore> {
    return new AgentStore(await KvRecords.open(conn, "agents", (raw) => AgentRecordSchema.parse(raw)));
  }

  /** Adds an agent, in `groups` if any; a name already in use is `invalid_request` (remove it first). */
  async add(name: string, tokenSha256: string, groups: readonly string[] = []): Promise<AgentRecord> {
    check(name);
    const record = AgentRecordSchema.parse({
      name,
      token_sha256: tokenSha256,
      created_at: Date.now(),
      ...(groups.length > 0 ? { groups: [...new Set(groups)].sort() } : {}),
    });
    if ((await this.records.create(name, record)) === null)
      throw new GeodeError(ErrorCode.InvalidRequest, `agent ${name} already exists`, { details: { name } });
    return record;
  }

  /** The agent's record, or null. */
  async get(name: string): Promise<AgentRecord | null> {
    if (!AGENT_NAME_PATTERN.test(name)) return null;
    return this.records.get(name);
  }

  /** Every agent, by name; `onMalformed` hears of keys holding something else. */
  async list(onMalformed?: (key: string) => void): Promise<AgentRecord[]> {
    return (await this.records.list(">", onMalformed))
      .map((r) => r.value)
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /** Removes an agent, its history included (no old digest stays behind); false when there was none. */
  async remove(name: string): Promise<boolean> {
    check(name);
    if ((await this.records.read(name).catch(() => null)) === null) return false;
    await this.records.purge(name);
    return true;
  }

  /** The agent whose token has this SHA-256 (hex), or null. Reads every agent: cache it with `watch`. */
  async findByTokenSha256(tokenSha256: string): Promise<AgentRecord | null> {
    return (await this.list()).find((a) => a.token_sha256 === tokenSha256) ?? null;
  }

  /** Follows the agents (see `KvRecords.watch`); one stored under another name counts as malformed. */
  watch(
    apply: (change: RecordChange<AgentRecord>) => void,
    onError?: (err: unknown) => void,
  ): Promise<RecordWatch> {
    return this.records.watch(apply, { onError, keyOf: (a) => a.name });
  }
}
