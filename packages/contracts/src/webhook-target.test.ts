import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  checkWebhookUrl,
  guardedLookup,
  type HostResolver,
  resolveWebhookHost,
  WebhookTargetRefused,
} from "./webhook-target.js";

let server: http.Server;
let port = 0;
let served = 0;

beforeAll(async () => {
  server = http.createServer((_req, res) => {
    served++;
    res.end("ok");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

/** GET http://<host>:<port>/ through the guarded lookup, on a fresh connection: the status, or the error. */
function get(host: string, lookup: ReturnType<typeof guardedLookup>): Promise<number | Error> {
  return new Promise((resolve) => {
    const req = http.get({ host, port, lookup, agent: false }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode ?? 0));
    });
    req.on("error", resolve);
  });
}

describe("webhook targets", () => {
  it("localhost, through the system resolver, is a loopback address: refused unless allowed", async () => {
    await expect(resolveWebhookHost("localhost", [])).rejects.toThrow(
      /^localhost resolves to (127\.0\.0\.1|::1), a loopback address$/,
    );
    const before = served;
    const refused = await get("localhost", guardedLookup([]));
    expect(refused).toBeInstanceOf(WebhookTargetRefused);
    expect(served).toBe(before);
    expect(await get("localhost", guardedLookup(["loopback"]))).toBe(200);
    expect(served).toBe(before + 1);
  });

  it("a name is resolved once per connection and the connection goes to the address checked (no rebinding)", async () => {
    // A test-only hosts mapping: the first answer is allowed, the next one is the metadata address.
    const answers = ["127.0.0.1", "169.254.169.254"];
    const asked: string[] = [];
    const resolve: HostResolver = async (hostname) => {
      asked.push(hostname);
      return [{ address: answers.shift() ?? "169.254.169.254", family: 4 }];
    };
    const lookup = guardedLookup(["loopback"], resolve);
    const before = served;
    expect(await get("rebind.test", lookup)).toBe(200);
    expect(asked).toEqual(["rebind.test"]);
    const second = await get("rebind.test", lookup);
    expect(second).toBeInstanceOf(WebhookTargetRefused);
    expect((second as Error).message).toBe(
      "rebind.test resolves to 169.254.169.254, a cloud metadata address",
    );
    expect(asked).toEqual(["rebind.test", "rebind.test"]);
    expect(served).toBe(before + 1);
  });

  it("a name with one refused address among public ones is refused", async () => {
    const resolve: HostResolver = async () => [
      { address: "93.184.216.34", family: 4 },
      { address: "10.0.0.7", family: 4 },
    ];
    await expect(resolveWebhookHost("mixed.test", [], resolve)).rejects.toThrow(
      "mixed.test resolves to 10.0.0.7, a private address",
    );
    await expect(resolveWebhookHost("mixed.test", ["private"], resolve)).resolves.toHaveLength(2);
  });

  it("registration: literals and metadata names are refused without resolving; a name not resolving now is allowed", async () => {
    const never: HostResolver = async () => {
      throw new Error("not asked");
    };
    expect(await checkWebhookUrl("http://169.254.169.254/latest/meta-data/", ["loopback"], never)).toEqual({
      refused: "169.254.169.254 is a cloud metadata address",
      kind: "metadata",
    });
    expect(await checkWebhookUrl("http://[::1]:8080/", [], never)).toEqual({
      refused: "::1 is a loopback address",
      kind: "loopback",
    });
    expect(await checkWebhookUrl("http://127.0.0.1:8080/", ["loopback"], never)).toEqual({ allowed: true });
    // What Node's connect hands the lookup is the host as written.
    await expect(resolveWebhookHost("Metadata.Google.Internal.", ["private"], never)).rejects.toThrow(
      "metadata.google.internal is a cloud metadata service",
    );
    expect(await checkWebhookUrl("https://hooks.example.invalid/x", [])).toEqual({
      allowed: true,
      unresolved: "hooks.example.invalid",
    });
  });
});
