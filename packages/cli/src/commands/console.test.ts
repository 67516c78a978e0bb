import { describe, expect, it } from "vitest";
import { captureIO } from "../capture-io.js";
import { consoleCommand } from "./console.js";

describe("geode console", () => {
  it("refuses to start without GEODE_CONSOLE_TOKEN", async () => {
    const io = captureIO({ GEODE_NAMESPACE: "console_cli" });
    expect(await consoleCommand.run([], io)).toBe(2);
    expect(io.stderr()).toContain("GEODE_CONSOLE_TOKEN is not set");
  });

  it("checks --port", async () => {
    const io = captureIO({ GEODE_CONSOLE_TOKEN: "t" });
    await expect(consoleCommand.run(["--port", "70000"], io)).rejects.toThrow(/--port/);
  });
});
