import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { discoverServices, humanLogLine } from "./service-processes.js";

describe("humanLogLine", () => {
  it("turns a pino JSON line into time, level, message and the remaining fields", () => {
    const line = JSON.stringify({
      level: 40,
      time: "2026-01-02T03:04:05.678Z",
      service: "tool-executor",
      msg: "tool call failed",
      tool_name: "fs.write",
      err: { type: "Error", message: "disk full", stack: "…" },
    });
    expect(humanLogLine(line)).toBe('03:04:05 WARN  tool call failed tool_name=fs.write err="disk full"');
  });

  it("keeps any other line as it is", () => {
    expect(humanLogLine("plain text")).toBe("plain text");
    expect(humanLogLine("{not json")).toBe("{not json");
    expect(humanLogLine('{"a":1}')).toBe('{"a":1}');
  });
});

describe("discoverServices", () => {
  it("finds the services with a main.ts, the known ones first in their order", () => {
    const found = discoverServices().map((s) => s.name);
    const known = ["hook-dispatcher", "tool-executor", "verifier", "activity-recorder"].filter((s) =>
      found.includes(s),
    );
    expect(found.slice(0, known.length)).toEqual(known);
    for (const s of discoverServices()) expect(s.nodeArgs.at(-1)).toMatch(/services\/[^/]+\/dist\/main\.js$/); // GEODE_FROM_SOURCE=0 in the suite
  });

  it("finds a service by its compiled main.js alone, as in the container image (no sources)", () => {
    const root = mkdtempSync(path.join(tmpdir(), "geode-services-"));
    try {
      mkdirSync(path.join(root, "services/verifier/dist"), { recursive: true });
      writeFileSync(path.join(root, "services/verifier/dist/main.js"), "");
      mkdirSync(path.join(root, "services/not-a-service/docs"), { recursive: true });
      expect(discoverServices(root).map((s) => s.name)).toEqual(["verifier"]);
      expect(discoverServices(root)[0]?.nodeArgs).toEqual([
        path.join(root, "services/verifier/dist/main.js"),
      ]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
