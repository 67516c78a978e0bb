import type { Logger } from "@geode/bus";
import { sha256 } from "@geode/contracts";

/** One line per remote address per window: a client retrying a wrong token cannot flood the log. */
const WINDOW_MS = 60_000;
/** Addresses remembered at once (a flood from many addresses costs bounded memory). */
const MAX_ADDRESSES = 1_024;

const BEARER = /^Bearer[ \t]+(\S{1,512})/i;

/**
 * Logs the hook calls the gateway refuses for their token (401), so an operator sees an agent
 * whose token is wrong or revoked: at most one warning per remote address per minute, counting
 * the refusals it stood for. Never the token: at most the first 12 hex digits of its SHA-256,
 * enough to tell two tokens apart, useless to guess one.
 */
export class RefusedTokenLog {
  /** Per remote address: when its last line was written, and refusals since then. */
  private readonly seen = new Map<string, { at: number; refused: number }>();

  constructor(
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  /** Notes one refused call from `remote` to `path` with the `authorization` header it sent. */
  note(remote: string | undefined, path: string, authorization: string | undefined): void {
    const address = remote ?? "unknown";
    const at = this.now();
    const last = this.seen.get(address);
    if (last !== undefined && at - last.at < WINDOW_MS) {
      last.refused++;
      return;
    }
    this.seen.delete(address);
    if (this.seen.size >= MAX_ADDRESSES) this.forgetOldest(at);
    this.seen.set(address, { at, refused: 1 });
    const token = authorization === undefined ? undefined : BEARER.exec(authorization)?.[1];
    this.log.warn(
      {
        remote_addr: address,
        path,
        token_sha256_prefix: token === undefined ? null : sha256(token).slice(0, 12),
        why: authorization === undefined ? "no bearer token" : token === undefined ? "malformed" : "unknown",
        refused_before: last?.refused ?? 0,
      },
      "agent-gateway refused an agent token (401)",
    );
  }

  /** Drops the addresses whose window is over, else the one written longest ago. */
  private forgetOldest(at: number): void {
    for (const [address, s] of this.seen) if (at - s.at >= WINDOW_MS) this.seen.delete(address);
    if (this.seen.size >= MAX_ADDRESSES) this.seen.delete(this.seen.keys().next().value as string);
  }
}
