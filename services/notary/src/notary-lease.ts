import { isRevisionConflict, type Logger } from "@geode/bus";
import { type NotaryLease as LeaseValue, NotaryLeaseSchema } from "@geode/contracts";
import type { KV } from "@nats-io/kv";

/** The one key of `{ns}_notary`: who is the active notary, and until when. */
export const LEASE_KEY = "lease";

/** A stored lease, or undefined when the value is not one (then it is taken over like a stale one). */
function parseLease(bytes: Uint8Array): LeaseValue | undefined {
  try {
    const v = NotaryLeaseSchema.safeParse(JSON.parse(new TextDecoder().decode(bytes)));
    return v.success ? v.data : undefined;
  } catch {
    return undefined;
  }
}

/**
 * One active notary among its replicas: a lease in KV `{ns}_notary`, taken with a create (none
 * held) or a revision-checked update (the holder's lease ran out), renewed revision-checked every
 * third of the lease, like the receipts' leases. A renewal that meets another revision has lost
 * the lease. `onChange` hears every change of this instance's role.
 */
export class NotaryLease {
  #active = false;
  #revision = 0;
  #timer: NodeJS.Timeout | undefined;
  #ticking: Promise<void> = Promise.resolve();
  #stopped = false;

  constructor(
    private readonly kv: KV,
    private readonly options: {
      holder: string;
      leaseMs: number;
      log: Logger;
      onChange: (active: boolean) => void;
    },
  ) {}

  get active(): boolean {
    return this.#active;
  }

  /** Tries at once, then every third of the lease. */
  start(): void {
    const tick = () => {
      this.#ticking = this.#ticking.then(() => this.tick()).catch(() => undefined);
    };
    tick();
    this.#timer = setInterval(tick, Math.max(50, Math.floor(this.options.leaseMs / 3)));
  }

  /** Stops renewing; a held lease is released so a standby takes over at once. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#timer);
    await this.#ticking;
    if (this.#active) {
      this.set(false);
      try {
        await this.kv.delete(LEASE_KEY, { previousSeq: this.#revision });
      } catch {
        // Taken by someone else meanwhile, or NATS is gone: the lease runs out by itself.
      }
    }
  }

  private set(active: boolean): void {
    if (active === this.#active) return;
    this.#active = active;
    this.options.log.info(
      { holder: this.options.holder },
      active ? "notary lease taken: active" : "notary lease lost: standby",
    );
    this.options.onChange(active);
  }

  private value(): string {
    const lease: LeaseValue = { holder: this.options.holder, lease_until: Date.now() + this.options.leaseMs };
    return JSON.stringify(lease);
  }

  private async tick(): Promise<void> {
    if (this.#stopped) return;
    try {
      if (this.#active) {
        this.#revision = await this.kv.update(LEASE_KEY, this.value(), this.#revision);
        return;
      }
      const entry = await this.kv.get(LEASE_KEY);
      const held = entry?.operation === "PUT" ? parseLease(entry.value) : undefined;
      if (entry?.operation !== "PUT") {
        this.#revision = await this.kv.create(LEASE_KEY, this.value());
      } else if (!held || held.lease_until < Date.now() || held.holder === this.options.holder) {
        this.#revision = await this.kv.update(LEASE_KEY, this.value(), entry.revision);
      } else {
        return;
      }
      if (!this.#stopped) this.set(true);
    } catch (err) {
      if (this.#active) {
        // A renewal refused for its revision: another notary holds the lease. Any other failure
        // (NATS away): this one cannot tell, so it stops writing before its lease can run out.
        this.options.log.warn({ err, conflict: isRevisionConflict(err) }, "notary lease not renewed");
        this.set(false);
      } else if (!isRevisionConflict(err)) {
        this.options.log.debug({ err }, "notary lease not taken");
      }
    }
  }
}
