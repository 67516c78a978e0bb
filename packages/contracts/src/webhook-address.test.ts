import { describe, expect, it } from "vitest";
import { addressKind, addressRefusal, checkHost, urlHost } from "./webhook-address.js";

describe("webhook addresses", () => {
  it("each address has its kind, IPv4 inside IPv6 (mapped, NAT64, 6to4) counted as the IPv4 one", () => {
    const kinds: Record<string, string> = {
      "169.254.169.254": "metadata",
      "100.100.100.200": "metadata",
      "fd00:ec2::254": "metadata",
      "169.254.1.2": "link-local",
      "fe80::1": "link-local",
      "fe80::1%eth0": "link-local",
      "0.0.0.0": "unspecified",
      "0.1.2.3": "unspecified",
      "::": "unspecified",
      "127.0.0.1": "loopback",
      "127.8.9.10": "loopback",
      "::1": "loopback",
      "::ffff:127.0.0.1": "loopback",
      "::ffff:7f00:1": "loopback",
      "64:ff9b::7f00:1": "loopback",
      "2002:7f00:1::": "loopback",
      "::ffff:169.254.169.254": "metadata",
      "10.1.2.3": "private",
      "172.16.0.1": "private",
      "172.31.255.255": "private",
      "192.168.1.1": "private",
      "100.64.0.1": "private",
      "fd12:3456::1": "private",
      "224.0.0.1": "multicast",
      "ff02::1": "multicast",
      "255.255.255.255": "reserved",
      "::7f00:1": "reserved",
      "8.8.8.8": "public",
      "172.32.0.1": "public",
      "100.128.0.1": "public",
      "2606:4700::1111": "public",
      "::ffff:8.8.8.8": "public",
    };
    for (const [ip, kind] of Object.entries(kinds)) expect(addressKind(ip), ip).toBe(kind);
    for (const notIp of ["localhost", "example.com", "1.2.3", "::g", ""])
      expect(addressKind(notIp)).toBeNull();
  });

  it("loopback and private are refused unless allowed; link-local, metadata and unspecified always", () => {
    expect(addressRefusal("127.0.0.1", [])).toBe("a loopback address");
    expect(addressRefusal("127.0.0.1", ["loopback"])).toBeNull();
    expect(addressRefusal("10.0.0.1", ["loopback"])).toBe("a private address");
    expect(addressRefusal("10.0.0.1", ["private"])).toBeNull();
    for (const ip of ["169.254.169.254", "169.254.1.1", "0.0.0.0", "::", "fe80::1"])
      expect(addressRefusal(ip, ["loopback", "private"]), ip).not.toBeNull();
    expect(addressRefusal("93.184.216.34", [])).toBeNull();
  });

  it("a URL's host is checked as the URL parser reads it: decimal and short IPv4, brackets, a trailing dot", () => {
    const host = (url: string) => urlHost(new URL(url));
    expect(host("http://2130706433/")).toBe("127.0.0.1");
    expect(host("http://0x7f.1/")).toBe("127.0.0.1");
    expect(host("http://0/")).toBe("0.0.0.0");
    expect(host("http://[::1]:8080/")).toBe("::1");
    expect(host("http://METADATA.google.internal./x")).toBe("metadata.google.internal");
    expect(checkHost(host("http://2130706433/"), [])).toEqual({
      verdict: "refused",
      reason: "127.0.0.1 is a loopback address",
      kind: "loopback",
    });
    expect(checkHost("metadata.google.internal", ["loopback", "private"])).toEqual({
      verdict: "refused",
      reason: "metadata.google.internal is a cloud metadata service",
      kind: "metadata",
    });
    expect(checkHost("127.0.0.1", ["loopback"])).toEqual({ verdict: "allowed" });
    expect(checkHost("hooks.example.com", [])).toEqual({ verdict: "resolve" });
  });
});
