import { lookup as dnsLookup } from "node:dns/promises";
import { isIP, type LookupFunction } from "node:net";
import {
  type AddressKind,
  addressKind,
  addressRefusal,
  checkHost,
  urlHost,
  type WebhookAllowable,
} from "./webhook-address.js";

/** One address a name resolves to. */
export interface ResolvedAddress {
  address: string;
  family: number;
}

/** Resolves a host name to all its addresses; the system resolver unless a test maps names. */
export type HostResolver = (hostname: string) => Promise<ResolvedAddress[]>;

const systemResolver: HostResolver = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });

/** A webhook host that may not be reached: an address, a metadata name, or a name resolving to one. */
export class WebhookTargetRefused extends Error {
  override readonly name = "WebhookTargetRefused";
  readonly code = "EGEODE_WEBHOOK_REFUSED";

  constructor(
    message: string,
    /** What the refused address is. */
    readonly kind: AddressKind,
  ) {
    super(message);
  }
}

/**
 * The addresses a webhook may connect to for `host` (a name or an IP literal): resolved once, every
 * address checked; one refused address refuses the name, so a name cannot hide an internal address
 * among public ones. Throws WebhookTargetRefused, or the resolver's error (ENOTFOUND, …).
 */
export async function resolveWebhookHost(
  host: string,
  allow: readonly WebhookAllowable[],
  resolve: HostResolver = systemResolver,
): Promise<ResolvedAddress[]> {
  // As a URL's host reads (no trailing dot, lower case), so `metadata.google.internal.` is known.
  const check = checkHost(host.replace(/\.$/, "").toLowerCase(), allow);
  if (check.verdict === "refused") throw new WebhookTargetRefused(check.reason, check.kind);
  if (check.verdict === "allowed") return [{ address: host, family: isIP(host) }];
  const addresses = await resolve(host);
  for (const { address } of addresses) {
    const why = addressRefusal(address, allow);
    if (why !== null)
      throw new WebhookTargetRefused(
        `${host} resolves to ${address}, ${why}`,
        addressKind(address) ?? "reserved",
      );
  }
  return addresses;
}

/**
 * A `lookup` for `http.request` and its agent: the connection goes to an address this lookup checked,
 * from the one resolution it made, so a name cannot answer the check with one address and the
 * connection with another (DNS rebinding). Node skips `lookup` for IP literals: check those with
 * `resolveWebhookHost` first.
 */
export function guardedLookup(
  allow: readonly WebhookAllowable[],
  resolve: HostResolver = systemResolver,
): LookupFunction {
  return (hostname, options, callback) => {
    resolveWebhookHost(hostname, allow, resolve).then(
      (all) => {
        const family = options.family === "IPv4" ? 4 : options.family === "IPv6" ? 6 : options.family;
        const usable = family ? all.filter((a) => a.family === family) : all;
        const first = usable[0];
        if (first === undefined) {
          const err = Object.assign(new Error(`${hostname} has no IPv${family} address`), {
            code: "ENOTFOUND",
          });
          callback(err, "", 0);
        } else if (options.all) callback(null, usable);
        else callback(null, first.address, first.family);
      },
      (err: NodeJS.ErrnoException) => callback(err, "", 0),
    );
  };
}

/** What registration says of a webhook URL: refused, or allowed (`unresolved`: a name that does not resolve now). */
export type WebhookUrlCheck = { refused: string; kind: AddressKind } | { allowed: true; unresolved?: string };

/**
 * Checks a webhook URL before it is registered: its host as written, then every address it resolves
 * to now. A name that does not resolve yet is allowed (`unresolved` says so): each call checks again.
 */
export async function checkWebhookUrl(
  url: string,
  allow: readonly WebhookAllowable[],
  resolve: HostResolver = systemResolver,
): Promise<WebhookUrlCheck> {
  const host = urlHost(new URL(url));
  try {
    await resolveWebhookHost(host, allow, resolve);
    return { allowed: true };
  } catch (err) {
    if (err instanceof WebhookTargetRefused) return { refused: err.message, kind: err.kind };
    return { allowed: true, unresolved: host };
  }
}
