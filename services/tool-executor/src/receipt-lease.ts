import type { Logger } from "@geode/bus";
import type { ReceiptStore, StoredReceipt } from "@geode/state";

/**
 * The lease an executor holds on the receipt of the operation it runs: renewed every third of its
 * length until the call lets go, so a second call with the same key sees `in_progress` while this
 * executor lives and `indeterminate` once it is gone (the lease lapsed). Renewals are
 * revision-checked: an operator's resolution meanwhile ends the lease for good.
 */
export class ReceiptLease {
  private held: StoredReceipt;
  private timer: NodeJS.Timeout | undefined;
  private renewing: Promise<void> | null = null;
  private lost = false;

  private constructor(
    private readonly store: ReceiptStore,
    held: StoredReceipt,
    private readonly leaseMs: number,
    private readonly log: Logger,
  ) {
    this.held = held;
  }

  /** Starts renewing the lease of a receipt this executor just admitted. */
  static hold(store: ReceiptStore, held: StoredReceipt, leaseMs: number, log: Logger): ReceiptLease {
    const lease = new ReceiptLease(store, held, leaseMs, log);
    lease.timer = setInterval(() => lease.renew(), Math.max(1, Math.floor(leaseMs / 3)));
    lease.timer.unref();
    return lease;
  }

  /** The receipt as last written by this executor. */
  get current(): StoredReceipt {
    return this.held;
  }

  private renew(): void {
    if (this.renewing !== null || this.timer === undefined) return;
    this.renewing = this.store
      .renew(this.held, Date.now() + this.leaseMs)
      .then(
        (next) => {
          if (next) this.held = next;
          else this.lose();
        },
        (err: unknown) => {
          // NATS away for a moment: the next tick tries again; the lease may lapse meanwhile.
          this.log.warn({ err, receipt_key: this.held.receipt.key }, "could not renew receipt lease");
        },
      )
      .finally(() => {
        this.renewing = null;
      });
  }

  /** Someone else (an operator) changed the receipt: never write it again. */
  private lose(): void {
    this.lost = true;
    this.halt();
    this.log.warn({ receipt_key: this.held.receipt.key }, "receipt changed by someone else; lease ended");
  }

  /** True once someone else changed the receipt; this executor no longer writes it. */
  get isLost(): boolean {
    return this.lost;
  }

  private halt(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Stops renewing; resolves with the receipt as last written once a renewal in flight settled. */
  async stop(): Promise<StoredReceipt> {
    this.halt();
    if (this.renewing !== null) await this.renewing;
    return this.held;
  }

  /**
   * Stops renewing and ends the lease now: the call gives up with an unknown outcome, and later
   * calls with the key get `indeterminate` at once instead of `in_progress` until it lapses.
   */
  async end(): Promise<StoredReceipt> {
    const held = await this.stop();
    if (this.lost) return held;
    try {
      const next = await this.store.renew(held, Date.now());
      if (next) this.held = next;
      else this.lose();
    } catch (err) {
      this.log.warn(
        { err, receipt_key: held.receipt.key },
        "could not end receipt lease; it lapses by itself",
      );
    }
    return this.held;
  }
}
