import { HookName, SchemaVersion, serveHook } from "@geode/sdk";
import { useTestEnv } from "@geode/testing";
import { describe, expect, it } from "vitest";
import { captureIO } from "../capture-io.js";
import { handlersLsCommand, handlersRmCommand } from "./handlers.js";

const env = useTestEnv();

const io = () => captureIO({ ...process.env, ...env().env });

describe("geode handlers", () => {
  it("lists live registrations as a table and removes one", async () => {
    const conn = { nc: env().nc, names: env().names };
    const guard = await serveHook(
      conn,
      HookName.PreToolUse,
      { name: "fs-guard", priority: 5, failureMode: "closed", match: { tool_name: ["fs.*", "git"] } },
      () => null,
    );
    const stop = await serveHook(
      conn,
      HookName.Stop,
      { name: "stopper", timeoutMs: 0, schemaVersion: SchemaVersion.V1 },
      () => null,
    );
    const ls = io();
    expect(await handlersLsCommand.run([], ls)).toBe(0);
    const lines = ls.stdout().trimEnd().split("\n");
    expect(lines[0]).toMatch(/^hook\s+name\s+priority\s+timeout\s+version\s+failure\s+match\s+lease left$/);
    expect(lines[2]).toMatch(
      /^PreToolUse\s+fs-guard\s+5\s+10000ms\s+v2\s+closed\s+tool_name: fs\.\*, git\s+\d+\.\ds$/,
    );
    expect(lines[3]).toMatch(/^Stop\s+stopper\s+100\s+none\s+v1\s+open\s+\*\s+\d+\.\ds$/);

    const rm = io();
    expect(await handlersRmCommand.run(["Stop", "stopper"], rm)).toBe(0);
    const after = io();
    await handlersLsCommand.run(["Stop"], after);
    expect(after.stdout()).toBe("no handlers registered for Stop\n");
    expect(await handlersRmCommand.run(["Stop", "stopper"], io())).toBe(1);
    await guard.close();
    await stop.close();
  });
});
