import type { Logger } from "@geode/bus";
import type { PolicyRecord } from "@geode/contracts";
import { type CompiledSet, checkPolicySet, PolicyEngine, policySetsInForce } from "@geode/policy";
import type { PolicyStore, RecordChange, RecordWatch } from "@geode/state";

/**
 * Keeps the engine in step with KV `{ns}_policies`: each change is checked against the schema and
 * compiled once; a value that is not a valid record or whose text does not validate is skipped
 * and logged, and the set's last good version stays in force (a new set that never was good is
 * simply absent). Every change reloads the engine at once, so it applies within the watch's delay.
 * On start the last good version comes from the bucket's history (`policySetsInForce`), so a set
 * whose current value is bad is enforced from its last good version after a restart too.
 */
export class PolicyLoader {
  readonly engine = new PolicyEngine();
  private readonly good = new Map<string, CompiledSet>();
  private watch: RecordWatch | undefined;
  private lastChangeAt = 0;

  constructor(
    private readonly store: PolicyStore,
    private readonly schema: string,
    private readonly log: Logger,
  ) {}

  /** Loads the sets in force (from the stored history), then follows changes. */
  async start(): Promise<void> {
    for (const s of policySetsInForce(await this.store.versions(), this.schema)) {
      if (s.enforced) this.good.set(s.key, s.enforced.set);
      if (s.refused)
        this.log.warn(
          {
            key: s.key,
            revision: s.refused.revision,
            error: s.refused.reason,
            enforced: s.enforced?.revision ?? null,
          },
          s.enforced
            ? "a policy set's stored value was refused; enforcing its last good version"
            : "a policy set's stored value was refused and it has no good version; it is not in force",
        );
    }
    if (this.good.size > 0) this.reload();
    this.watch = await this.store.watch(
      (change) => this.apply(change),
      (err) => this.log.error({ err }, "policy watch ended"),
    );
  }

  /** When the sets in force last changed (epoch ms; 0 before any). */
  changedAt(): number {
    return this.lastChangeAt;
  }

  private apply(change: RecordChange<PolicyRecord>): void {
    if (change.malformed) {
      this.log.warn(
        { key: change.key },
        "skipping a policy set that is not a valid record; keeping its last good version",
      );
      return;
    }
    if (change.value === null) {
      if (!this.good.delete(change.key)) return;
    } else {
      const compiled = this.compile(change.value);
      if (!compiled) return;
      this.good.set(change.key, compiled);
    }
    this.reload();
  }

  private compile(record: PolicyRecord): CompiledSet | undefined {
    try {
      return checkPolicySet(record.name, record.text, record.mode, this.schema);
    } catch (err) {
      this.log.warn(
        { set: record.name, error: err instanceof Error ? err.message : String(err) },
        "skipping an invalid policy set; keeping its last good version",
      );
      return undefined;
    }
  }

  private reload(): void {
    const sets = [...this.good.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    this.engine.load(sets);
    this.lastChangeAt = Date.now();
    this.log.info(
      { sets: sets.map((s) => ({ name: s.name, mode: s.mode, sha256: s.sha256.slice(0, 12) })) },
      "policy sets loaded",
    );
  }

  async stop(): Promise<void> {
    await this.watch?.stop();
  }
}
