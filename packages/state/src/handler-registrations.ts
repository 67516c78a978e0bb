import type { GeodeConnection } from "@geode/bus";
import {
  ErrorCode,
  GeodeError,
  type HandlerRegistration,
  HandlerRegistrationSchema,
  type HookName,
  type Names,
} from "@geode/contracts";
import { KvRecords, type RecordChange, type RecordWatch } from "./kv-records.js";

/** Two registrations are replicas of one handler when everything but the heartbeat agrees. */
export function sameHandlerConfig(a: HandlerRegistration, b: HandlerRegistration): boolean {
  return (
    a.hook === b.hook &&
    a.name === b.name &&
    a.priority === b.priority &&
    a.timeout_ms === b.timeout_ms &&
    a.schema_version === b.schema_version &&
    a.failure_mode === b.failure_mode &&
    JSON.stringify(a.match ?? null) === JSON.stringify(b.match ?? null)
  );
}

/** How often a registry reader re-reads the whole bucket besides following it. */
const REGISTRY_RESYNC_MS = 5_000;

/** True when the registration's lease ran out (its handler stopped beating). */
export function leaseExpired(reg: HandlerRegistration, now = Date.now()): boolean {
  return reg.heartbeat_at + reg.lease_ms < now;
}

/**
 * The hook handler registry, KV `{ns}_hook_handlers`, key `{HookName}.{handler}`. Owners: each
 * handler writes only its own key (through its SDK: register, heartbeat, delete on close); the
 * hook-dispatcher only reads (a watch); an operator deletes a dead registration
 * (`geode handlers rm`).
 */
export class HandlerRegistrations {
  private constructor(
    private readonly records: KvRecords<HandlerRegistration>,
    private readonly names: Names,
  ) {}

  static async open(conn: GeodeConnection): Promise<HandlerRegistrations> {
    const records = await KvRecords.open(conn, "hookHandlers", (raw) => HandlerRegistrationSchema.parse(raw));
    return new HandlerRegistrations(records, conn.names);
  }

  key(hook: HookName, handler: string): string {
    return this.names.handlerKey(hook, handler);
  }

  /**
   * Writes the registration: creates the key, or (a replica, a heartbeat) refreshes it when the
   * stored value agrees. A live registration with another configuration is `duplicate_handler`; a
   * dead `open` one (lease expired) is replaced, a dead `closed` one must be removed by an operator
   * first. A stored value that is not a registration is replaced.
   */
  async register(reg: HandlerRegistration): Promise<void> {
    const key = this.key(reg.hook, reg.name);
    await this.records.mutate(
      key,
      (stored) => {
        if (
          stored &&
          !sameHandlerConfig(stored, reg) &&
          !(leaseExpired(stored) && stored.failure_mode === "open")
        )
          throw new GeodeError(
            ErrorCode.DuplicateHandler,
            `handler ${reg.name} is already registered for ${reg.hook} with another configuration`,
            { details: { hook: reg.hook, name: reg.name } },
          );
        return reg;
      },
      { replaceMalformed: true },
    );
  }

  /**
   * Deletes the registration if it is still this handler's configuration (revision-checked, so a
   * replica's concurrent heartbeat or another configuration is never removed).
   */
  async unregister(reg: HandlerRegistration): Promise<boolean> {
    const key = this.key(reg.hook, reg.name);
    const current = await this.records.read(key).catch(() => null);
    if (!current || !sameHandlerConfig(current.value, reg)) return false;
    return this.records.delete(key, current.revision);
  }

  /** An operator's removal of whatever is registered under `{hook}.{handler}`; false when nothing is. */
  async remove(hook: HookName, handler: string): Promise<boolean> {
    const key = this.key(hook, handler);
    const entry = await this.records.kv.get(key).catch(() => null);
    if (entry?.operation !== "PUT") return false;
    return this.records.delete(key, entry.revision);
  }

  /**
   * An operator's removal of a dead registration only (the console's): `live` while its lease
   * holds, also when a heartbeat lands between the read and the revision-checked delete.
   */
  async removeExpired(
    hook: HookName,
    handler: string,
    now = Date.now(),
  ): Promise<"removed" | "not_found" | "live"> {
    const current = await this.records.read(this.key(hook, handler)).catch(() => null);
    if (!current) return "not_found";
    if (!leaseExpired(current.value, now)) return "live";
    return (await this.records.delete(this.key(hook, handler), current.revision)) ? "removed" : "live";
  }

  /** Every registration (of one hook, if given); `onMalformed` hears of keys holding something else. */
  async list(hook?: HookName, onMalformed?: (key: string) => void): Promise<HandlerRegistration[]> {
    return (await this.records.list(hook ? `${hook}.>` : ">", onMalformed)).map((r) => r.value);
  }

  /**
   * Follows the registry (see `KvRecords.watch`). A value stored under a key that is not its own
   * `{hook}.{name}` counts as malformed.
   */
  watch(
    apply: (change: RecordChange<HandlerRegistration>) => void,
    onError?: (err: unknown) => void,
  ): Promise<RecordWatch> {
    // Leases are renewed every lease/3 (5 s by default): a reader re-reads as often, so a stalled
    // watch never leaves a live handler looking expired (a closed one would block every call).
    return this.records.watch(apply, {
      onError,
      keyOf: (r) => this.key(r.hook, r.name),
      resyncMs: REGISTRY_RESYNC_MS,
    });
  }
}
