import { CLAUDE_CODE_EVENTS } from "@geode/contracts";
import { describe, expect, it } from "vitest";
import { claudeCodeHooks, mergeHooks } from "./claude-code-settings.js";

const options = {
  hookUrl: "http://127.0.0.1:4280/v1/claude-code/hook",
  shimCommand:
    "'/usr/bin/node' '/x/geode.mjs' 'hook-shim' '--url' 'http://127.0.0.1:4280/v1/claude-code/hook'",
  approvalTimeoutMs: 60_000,
  failClosed: false,
};

describe("the Claude Code hooks block", () => {
  it("sends every mapped event to the gateway over http with the token header, SessionStart through the shim", () => {
    const hooks = claudeCodeHooks(options);
    expect(Object.keys(hooks)).toEqual(CLAUDE_CODE_EVENTS.map((e) => e.event));
    expect(hooks["PreToolUse"]).toEqual([
      {
        matcher: "*",
        hooks: [
          {
            type: "http",
            url: options.hookUrl,
            headers: { Authorization: "Bearer $GEODE_AGENT_TOKEN" },
            allowedEnvVars: ["GEODE_AGENT_TOKEN"],
            timeout: 90,
          },
        ],
      },
    ]);
    expect(hooks["Stop"]?.[0]).not.toHaveProperty("matcher");
    expect(hooks["SessionStart"]).toEqual([
      { hooks: [{ type: "command", command: options.shimCommand, timeout: 30 }] },
    ]);
  });

  it("--fail-closed blocks the guarded events when the gateway fails, and only those", () => {
    const hooks = claudeCodeHooks({ ...options, failClosed: true });
    const blocking = Object.entries(hooks)
      .filter(([, g]) => g[0]?.hooks[0]?.["onFailure"] === "block")
      .map(([e]) => e);
    expect(blocking.sort()).toEqual(["PermissionRequest", "PreToolUse", "UserPromptSubmit"]);
  });

  it("merging keeps other settings and hooks, and replaces what it wrote before", () => {
    const mine = { type: "command", command: "./lint.sh" };
    const existing = {
      model: "sonnet",
      permissions: { allow: ["Bash(ls)"] },
      hooks: {
        PreToolUse: [{ matcher: "Write", hooks: [mine] }],
        Stop: [{ hooks: [{ type: "http", url: "http://old-host:4280/v1/claude-code/hook" }, mine] }],
      },
    };
    const once = mergeHooks(existing, claudeCodeHooks(options));
    const twice = mergeHooks(once, claudeCodeHooks(options));
    expect(twice).toEqual(once);
    expect(once).toMatchObject({ model: "sonnet", permissions: { allow: ["Bash(ls)"] } });
    const hooks = once["hooks"] as Record<string, Array<{ matcher?: string; hooks: unknown[] }>>;
    expect(hooks["PreToolUse"]).toHaveLength(2);
    expect(hooks["PreToolUse"]?.[0]).toEqual({ matcher: "Write", hooks: [mine] });
    expect(hooks["Stop"]).toEqual([{ hooks: [mine] }, ...claudeCodeHooks(options)["Stop"]!]);
    expect(() => mergeHooks([], claudeCodeHooks(options))).toThrow(/JSON object/);
  });
});
