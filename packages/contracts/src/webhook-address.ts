import { isIP } from "node:net";

// ---- which addresses a webhook may reach (docs/webhooks.md, "Addresses") ----

/** The kinds of address a webhook may reach only when the configuration allows them. */
export const WEBHOOK_ALLOWABLE = ["loopback", "private"] as const;
export type WebhookAllowable = (typeof WEBHOOK_ALLOWABLE)[number];

/** What an IP address is, as far as webhooks care. */
export type AddressKind =
  | "public"
  | "loopback"
  | "private"
  | "link-local"
  | "metadata"
  | "unspecified"
  | "multicast"
  | "reserved";

/** Cloud instance metadata services by name (they sit on link-local or private addresses). */
export const METADATA_HOSTS: readonly string[] = [
  "metadata.google.internal",
  "metadata.goog",
  "metadata",
  "instance-data",
  "instance-data.ec2.internal",
];

interface Range {
  bytes: number[];
  prefix: number;
  kind: AddressKind;
}

const v4 = (cidr: string, kind: AddressKind): Range => {
  const [addr = "", prefix = "32"] = cidr.split("/");
  return { bytes: addr.split(".").map(Number), prefix: Number(prefix), kind };
};
const v6 = (cidr: string, kind: AddressKind): Range => {
  const [addr = "", prefix = "128"] = cidr.split("/");
  return { bytes: ipv6Bytes(addr) ?? [], prefix: Number(prefix), kind };
};

// First match wins: the narrow ranges (metadata) come before the wide ones holding them.
const V4_RANGES: readonly Range[] = [
  v4("169.254.169.254/32", "metadata"), // AWS, GCP, Azure, OCI, …
  v4("100.100.100.200/32", "metadata"), // Alibaba Cloud
  v4("0.0.0.0/8", "unspecified"), // "this network"; 0.0.0.0 reaches the host itself on Linux
  v4("127.0.0.0/8", "loopback"),
  v4("169.254.0.0/16", "link-local"),
  v4("10.0.0.0/8", "private"),
  v4("172.16.0.0/12", "private"),
  v4("192.168.0.0/16", "private"),
  v4("100.64.0.0/10", "private"), // shared address space (carrier-grade NAT)
  v4("224.0.0.0/4", "multicast"),
  v4("240.0.0.0/4", "reserved"), // 255.255.255.255 included
];

const V6_RANGES: readonly Range[] = [
  v6("fd00:ec2::254/128", "metadata"), // AWS over IPv6
  v6("::/128", "unspecified"),
  v6("::1/128", "loopback"),
  v6("::/96", "reserved"), // IPv4-compatible, deprecated
  v6("fe80::/10", "link-local"),
  v6("fc00::/7", "private"), // unique local
  v6("fec0::/10", "private"), // site-local, deprecated
  v6("ff00::/8", "multicast"),
];

/** The IPv4 address an IPv6 one stands for: mapped (`::ffff:a.b.c.d`), NAT64 (`64:ff9b::/96`), 6to4. */
function embeddedIpv4(b: number[]): number[] | null {
  const zero = (from: number, to: number) => b.slice(from, to).every((x) => x === 0);
  if (zero(0, 10) && b[10] === 0xff && b[11] === 0xff) return b.slice(12);
  if (b[0] === 0x00 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && zero(4, 12)) return b.slice(12);
  if (b[0] === 0x20 && b[1] === 0x02) return b.slice(2, 6);
  return null;
}

function ipv4Bytes(s: string): number[] {
  return s.split(".").map(Number);
}

/** The 16 bytes of an IPv6 address (`::`, an embedded dotted quad and a `%zone` allowed), or null. */
function ipv6Bytes(raw: string): number[] | null {
  const s = raw.replace(/%.*$/, "");
  const halves = s.split("::");
  if (halves.length > 2) return null;
  const groups = (part: string): number[] | null => {
    if (part === "") return [];
    const out: number[] = [];
    for (const g of part.split(":")) {
      if (g.includes(".")) {
        const q = ipv4Bytes(g);
        out.push(((q[0] ?? 0) << 8) | (q[1] ?? 0), ((q[2] ?? 0) << 8) | (q[3] ?? 0));
      } else if (/^[0-9a-fA-F]{1,4}$/.test(g)) out.push(Number.parseInt(g, 16));
      else return null;
    }
    return out;
  };
  const head = groups(halves[0] ?? "");
  const tail = halves.length === 2 ? groups(halves[1] ?? "") : [];
  if (head === null || tail === null) return null;
  const fill = 8 - head.length - tail.length;
  if (fill < 0 || (halves.length === 1 && fill !== 0)) return null;
  const words = [...head, ...new Array<number>(fill).fill(0), ...tail];
  return words.flatMap((w) => [w >> 8, w & 0xff]);
}

function inRange(bytes: number[], r: Range): boolean {
  for (let bit = 0; bit < r.prefix; bit++) {
    const i = bit >> 3;
    const mask = 0x80 >> (bit & 7);
    if (((bytes[i] ?? 0) & mask) !== ((r.bytes[i] ?? 0) & mask)) return false;
  }
  return true;
}

function kindOfBytes(bytes: number[], ranges: readonly Range[]): AddressKind {
  return ranges.find((r) => inRange(bytes, r))?.kind ?? "public";
}

/** What `ip` (an IPv4 or IPv6 literal, without brackets) is; null when it is not an IP address. */
export function addressKind(ip: string): AddressKind | null {
  const family = isIP(ip.replace(/%.*$/, ""));
  if (family === 4) return kindOfBytes(ipv4Bytes(ip), V4_RANGES);
  if (family !== 6) return null;
  const bytes = ipv6Bytes(ip);
  if (bytes === null) return null;
  const inner = embeddedIpv4(bytes);
  return inner ? kindOfBytes(inner, V4_RANGES) : kindOfBytes(bytes, V6_RANGES);
}

const KIND_TEXT: Record<Exclude<AddressKind, "public">, string> = {
  loopback: "a loopback address",
  private: "a private address",
  "link-local": "a link-local address",
  metadata: "a cloud metadata address",
  unspecified: "an unspecified address",
  multicast: "a multicast address",
  reserved: "a reserved address",
};

/**
 * Why a webhook may not reach `ip` ("a loopback address"), or null when it may: public addresses
 * always, loopback and private ones only when `allow` names them, the others never.
 */
export function addressRefusal(ip: string, allow: readonly WebhookAllowable[]): string | null {
  const kind = addressKind(ip);
  if (kind === null) return "not an IP address";
  if (kind === "public") return null;
  if ((kind === "loopback" || kind === "private") && allow.includes(kind)) return null;
  return KIND_TEXT[kind];
}

/** A URL's host as a name or an address: lower case, no brackets, no trailing dot. */
export function urlHost(url: URL): string {
  return url.hostname
    .replace(/^\[(.*)\]$/, "$1")
    .replace(/\.$/, "")
    .toLowerCase();
}

/** What can be said of a webhook host before resolving it. */
export type HostCheck =
  | { verdict: "refused"; reason: string; kind: AddressKind }
  | { verdict: "allowed" }
  /** A name: check each address it resolves to. */
  | { verdict: "resolve" };

/** Refuses an address or a metadata name that may not be reached; any other name is to be resolved. */
export function checkHost(host: string, allow: readonly WebhookAllowable[]): HostCheck {
  if (METADATA_HOSTS.includes(host))
    return { verdict: "refused", reason: `${host} is a cloud metadata service`, kind: "metadata" };
  const kind = addressKind(host);
  if (kind === null) return { verdict: "resolve" };
  const why = addressRefusal(host, allow);
  return why === null ? { verdict: "allowed" } : { verdict: "refused", reason: `${host} is ${why}`, kind };
}
