import net from "node:net";
import { describe, expect, it } from "vitest";
import { freePort, portOpen } from "./ports.js";

describe("freePort and portOpen", () => {
  it("gives a port nobody listens on, which is open once a server listens there", async () => {
    const port = await freePort();
    expect(await portOpen(port)).toBe(false);
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
    try {
      expect(await portOpen(port)).toBe(true);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
