import { CODEX_EVENTS } from "@geode/contracts";
import { parse } from "smol-toml";
import { describe, expect, it } from "vitest";
import { codexHooks, hooksToml, mergeCodexConfig, trustKeysOutsideBlock, trustToml } from "./codex-config.js";

const ENDPOINT = "http://127.0.0.1:4280/v1/codex/hook";
const hooks = (failClosed = false) =>
  hooksToml(codexHooks({ endpoint: ENDPOINT, approvalTimeoutMs: 60_000, failClosed }));
type Parsed = {
  hooks: Record<
    string,
    Array<{ matcher?: string; hooks: Array<{ type: string; command: string; timeout: number }> }>
  >;
};

describe("the hooks geode connect codex writes", () => {
  it("cover every mapped event, one command hook each, a matcher on the tool events", () => {
    const parsed = parse(hooks()) as Parsed;
    expect(Object.keys(parsed.hooks)).toEqual(CODEX_EVENTS.map((e) => e.event));
    for (const e of CODEX_EVENTS) {
      const [group] = parsed.hooks[e.event] ?? [];
      expect(group?.hooks).toHaveLength(1);
      expect(group?.hooks[0]).toMatchObject({ type: "command" });
      expect(group?.hooks[0]?.command).toContain(ENDPOINT);
      expect("matcher" in (group ?? {})).toBe(e.tool);
    }
    // Codex clamps these two to 3 s; the tool hooks outlast a human approval.
    expect(parsed.hooks["SessionEnd"]?.[0]?.hooks[0]?.timeout).toBe(3);
    expect(parsed.hooks["PreToolUse"]?.[0]?.hooks[0]?.timeout).toBe(90);
  });

  it("refuse when the gateway cannot answer only for guarded events, and only with --fail-closed", () => {
    const closed = parse(hooks(true)) as Parsed;
    for (const e of CODEX_EVENTS)
      expect(
        closed.hooks[e.event]?.[0]?.hooks[0]?.command.endsWith(e.guards ? "exit 2; }" : "exit 1; }"),
        e.event,
      ).toBe(true);
    const open = parse(hooks(false)) as Parsed;
    for (const e of CODEX_EVENTS) expect(open.hooks[e.event]?.[0]?.hooks[0]?.command).toMatch(/exit 1; }$/);
  });
});

describe("merging into a Codex config", () => {
  const user =
    '# my settings\nmodel = "o3"\n\n[[hooks.PreToolUse]]\nmatcher = "Bash"\n[[hooks.PreToolUse.hooks]]\ntype = "command"\ncommand = "my-guard"\n';

  it("keeps what is there (comments too), and a second run replaces its block instead of doubling it", () => {
    const once = mergeCodexConfig(user, hooks());
    const twice = mergeCodexConfig(once, hooks());
    expect(twice).toBe(once);
    expect(once.startsWith(user.trimEnd())).toBe(true);
    const parsed = parse(twice) as Parsed & { model: string };
    expect(parsed.model).toBe("o3");
    expect(parsed.hooks["PreToolUse"]?.map((g) => g.hooks[0]?.command)).toEqual([
      "my-guard",
      expect.stringContaining(ENDPOINT),
    ]);
  });

  it("refuses to write a config Codex could not read (it would drop all of it)", () => {
    const inline = "hooks = { PreToolUse = [] }\n";
    expect(() => mergeCodexConfig(inline, hooks())).toThrow();
    expect(() => mergeCodexConfig("model = \n", hooks())).toThrow();
  });

  it("records trust as Codex does, and sees trust records the user keeps outside its block", () => {
    const key = "/home/dev/.codex/config.toml:pre_tool_use:1:0";
    const merged = mergeCodexConfig(user, `${hooks()}\n${trustToml([{ key, hash: "sha256:abc" }])}`);
    const parsed = parse(merged) as { hooks: { state: Record<string, { trusted_hash: string }> } };
    expect(parsed.hooks.state[key]).toEqual({ trusted_hash: "sha256:abc" });
    expect(trustKeysOutsideBlock(merged).size).toBe(0);
    const theirs = `${user}\n[hooks.state."${key}"]\ntrusted_hash = "sha256:old"\n`;
    expect(trustKeysOutsideBlock(mergeCodexConfig(theirs, hooks()))).toEqual(new Set([key]));
  });
});
