import { GeodeError, HookName, SchemaVersion } from "@geode/contracts";
import { sameHandlerConfig } from "@geode/state";
import { describe, expect, it } from "vitest";
import { buildRegistration } from "./serve-hook.js";

const codeOf = (f: () => unknown) => {
  try {
    f();
    return "ok";
  } catch (e) {
    return e instanceof GeodeError ? e.code : String(e);
  }
};

describe("buildRegistration", () => {
  it("fills the registration's defaults", () => {
    const reg = buildRegistration(HookName.PreToolUse, { name: "guard" });
    expect(reg).toMatchObject({
      hook: "PreToolUse",
      name: "guard",
      priority: 100,
      timeout_ms: 10_000,
      schema_version: SchemaVersion.V2,
      failure_mode: "open",
      match: null,
      lease_ms: 15_000,
    });
    expect(typeof reg.heartbeat_at).toBe("number");
  });

  it("refuses unknown hooks, wildcards, bad names and bad options", () => {
    expect(codeOf(() => buildRegistration("Nope", { name: "a" }))).toBe("unknown_hook");
    expect(codeOf(() => buildRegistration("PreToolUse.*", { name: "a" }))).toBe("invalid_request");
    expect(codeOf(() => buildRegistration("PreToolUse", { name: "a>" }))).toBe("invalid_request");
    expect(codeOf(() => buildRegistration("PreToolUse", { name: "" }))).toBe("invalid_request");
    expect(codeOf(() => buildRegistration("PreToolUse", { name: "a", timeoutMs: -1 }))).toBe(
      "invalid_request",
    );
    expect(codeOf(() => buildRegistration("PreToolUse", { name: "a", priority: 1.5 }))).toBe(
      "invalid_request",
    );
    expect(codeOf(() => buildRegistration("PreToolUse", { name: "a", leaseMs: 0 }))).toBe("invalid_request");
    expect(codeOf(() => buildRegistration("PreToolUse", { name: "a", match: { tool_name: [] } }))).toBe(
      "invalid_request",
    );
    expect(codeOf(() => buildRegistration("Stop", { name: "a", match: { tool_name: ["x"] } }))).toBe(
      "invalid_request",
    );
    expect(
      codeOf(() => buildRegistration("PostToolUse", { name: "a", match: { tool_name: ["fs.*"] } })),
    ).toBe("ok");
  });

  it("treats registrations differing only in heartbeat as replicas", () => {
    const a = buildRegistration(HookName.Stop, { name: "s", priority: 1 });
    expect(sameHandlerConfig(a, { ...a, heartbeat_at: a.heartbeat_at + 1 })).toBe(true);
    expect(sameHandlerConfig(a, { ...a, priority: 2 })).toBe(false);
    expect(sameHandlerConfig(a, { ...a, schema_version: SchemaVersion.V1 })).toBe(false);
    expect(sameHandlerConfig(a, { ...a, match: { tool_name: ["x"] } })).toBe(false);
  });
});
