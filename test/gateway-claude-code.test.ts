/**
 * The real Claude Code CLI, headless and offline, governed through the agent gateway: its settings
 * come from `geode connect claude-code --write`, its token from `geode agents add`, and its model
 * is a scripted stand-in for the Anthropic Messages API on loopback.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { HookName } from "@geode/contracts";
import { freePort } from "@geode/local-server";
import { type HookEnvelope, serveApprovals } from "@geode/sdk";
import { waitFor } from "@geode/testing";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { shellCommandOf, useAgentPlane } from "./agent-plane-support.js";
import {
  type AnthropicStandIn,
  type ClaudeRun,
  runClaude,
  scratch,
  startAnthropicStandIn,
  type Turn,
} from "./claude-code-support.js";
import { startTestNotary } from "./notary-support.js";

const plane = useAgentPlane("claude");
const { env, cleanups } = plane;
let settingsDir = "";

const geode = (...argv: string[]) => plane.geode(argv);

/** Writes Claude Code settings with `geode connect claude-code` and returns the file. */
async function settingsFor(url: string, ...flags: string[]): Promise<string> {
  const file = path.join(settingsDir, `settings-${Math.random().toString(36).slice(2)}.json`);
  const r = await geode("connect", "claude-code", "--url", url, "--write", file, ...flags);
  expect(r.code, r.err).toBe(0);
  return file;
}

/** One Claude Code session: a scratch HOME and project, the stand-in with `script`, `claude -p`. */
async function session(
  script: Turn[],
  options: {
    settings?: string;
    token?: string;
    args?: string[];
    prompt?: string;
    prepare?: (work: string) => void;
  } = {},
): Promise<{ run: ClaudeRun; api: AnthropicStandIn; work: string; sessionId: string }> {
  const api = await startAnthropicStandIn(script);
  const dirs = scratch();
  cleanups.push(() => api.close(), dirs.cleanup);
  options.prepare?.(dirs.work);
  const run = await runClaude({
    prompt: options.prompt ?? "Do the task.",
    settingsFile: options.settings ?? (await settingsFor(plane.gateway().url)),
    apiUrl: api.url,
    home: dirs.home,
    cwd: dirs.work,
    token: options.token ?? plane.token(),
    args: options.args ?? ["--allowedTools", "Bash"],
  });
  expect(run.result, `claude exited ${run.code}: ${run.stderr.slice(-2000)}`).not.toBeNull();
  return { run, api, work: dirs.work, sessionId: String(run.result?.["session_id"] ?? "") };
}

const bash = (command: string): Turn => ({
  tool: { name: "Bash", input: { command, description: "run it" } },
});

beforeAll(() => {
  settingsDir = mkdtempSync(path.join(tmpdir(), "geode-cc-settings-"));
});

afterAll(() => {
  rmSync(settingsDir, { recursive: true, force: true });
});

// Each case runs a real Claude Code process (and hook shims): give it room on a loaded machine.
const CLI = { timeout: 240_000 };

describe("Claude Code governed through the agent gateway", () => {
  it(
    "a PreToolUse guard blocks a Bash call: the command never runs, Claude sees the reason",
    CLI,
    async () => {
      await plane
        .scope()
        .serve(HookName.PreToolUse, { name: "no-touch", match: { tool_name: ["Bash"] } }, (e) =>
          shellCommandOf(e).includes("blocked.txt")
            ? { action: "block", reason: "touching blocked.txt is not allowed" }
            : null,
        );
      const { run, api, work } = await session([bash("touch blocked.txt"), { text: "Could not do it." }]);
      expect(existsSync(path.join(work, "blocked.txt"))).toBe(false);
      expect(run.result?.["permission_denials"]).toEqual([expect.objectContaining({ tool_name: "Bash" })]);
      expect(api.main()[1]?.raw).toContain("no-touch: touching blocked.txt is not allowed");
    },
  );

  it("a PreToolUse rewrite changes the command that runs", CLI, async () => {
    await plane.scope().serve(HookName.PreToolUse, { name: "redirect" }, (e) =>
      shellCommandOf(e) === "touch original.txt"
        ? {
            action: "rewrite",
            updates: { arguments: { ...(e.payload["arguments"] as object), command: "touch rewritten.txt" } },
          }
        : null,
    );
    const { work } = await session([bash("touch original.txt"), { text: "Done." }]);
    expect(existsSync(path.join(work, "rewritten.txt"))).toBe(true);
    expect(existsSync(path.join(work, "original.txt"))).toBe(false);
  });

  it("Claude Code's permission prompt is answered by an approver on the plane", CLI, async () => {
    const asked: string[] = [];
    const calls: string[] = [];
    const approver = serveApprovals({ nc: env().nc, names: env().names }, (r) => {
      asked.push(r.detail);
      calls.push(r.correlation.tool_call_id);
      return r.detail.includes("approved.txt") ? { decision: "allow", reason: "looks fine" } : "deny";
    });
    cleanups.push(() => approver.close());
    await env().nc.flush();
    // No --allowedTools: Claude Code asks before the command writes a file.
    const { work } = await session(
      [bash("touch approved.txt"), bash("touch refused.txt"), { text: "Done." }],
      {
        args: [],
      },
    );
    expect(asked.some((d) => d.includes("touch approved.txt"))).toBe(true);
    expect(existsSync(path.join(work, "approved.txt"))).toBe(true);
    expect(existsSync(path.join(work, "refused.txt"))).toBe(false);
    // Claude Code's prompt names no call; the plane finds the one PreToolUse announced.
    expect(calls.length).toBeGreaterThanOrEqual(2);
    for (const id of calls) expect(id).toMatch(/^toolu_/);
  });

  it("PostToolUse context reaches the model's next request", CLI, async () => {
    await plane
      .scope()
      .serve(HookName.PostToolUse, { name: "hint" }, (e) =>
        e.payload["has_error"]
          ? null
          : { action: "add_context", reason: "GEODE-HINT: the build cache is cold" },
      );
    const { api } = await session([bash("echo hello"), { text: "Done." }]);
    expect(api.main()).toHaveLength(2);
    expect(api.main()[1]?.raw).toContain("GEODE-HINT: the build cache is cold");
    expect(api.main()[0]?.raw).not.toContain("GEODE-HINT");
  });

  it("a Stop loop is ended by the revise budget", CLI, async () => {
    const verdicts: number[] = [];
    await plane.scope().serve(HookName.PostVerify, { name: "never-satisfied" }, (e) => {
      verdicts.push(e.correlation.verify_attempt);
      return { action: "revise", instruction: "GEODE-REVISE: add the test results." };
    });
    const { run, api } = await session([
      { text: "Finished." },
      { text: "Finished, really." },
      { text: "Still finished." },
    ]);
    // Two revisions reach the model; the third verdict is past the budget and stops Claude Code.
    expect(verdicts).toEqual([0, 1, 2]);
    expect(api.main()).toHaveLength(3);
    expect(api.main()[1]?.raw).toContain("GEODE-REVISE: add the test results.");
    expect(run.code).toBe(0);
  });

  it(
    "fails closed: a closed guard that is down denies the call; with --fail-closed settings a dead gateway blocks the prompt",
    CLI,
    async () => {
      await plane.scope().register({
        hook: HookName.PreToolUse,
        name: "crashed-guard",
        failure_mode: "closed",
        timeout_ms: 500,
      });
      const guarded = await session([bash("touch guarded.txt"), { text: "Done." }]);
      expect(existsSync(path.join(guarded.work, "guarded.txt"))).toBe(false);
      expect(guarded.api.main()[1]?.raw).toContain("failure_mode closed");

      const dead = await settingsFor(`http://127.0.0.1:${await freePort()}`, "--fail-closed");
      const blocked = await session([bash("touch never.txt")], { settings: dead });
      expect(blocked.api.main()).toHaveLength(0);
      expect(String(blocked.run.result?.["result"])).toMatch(/blocked/i);
      expect(existsSync(path.join(blocked.work, "never.txt"))).toBe(false);
    },
  );

  it(
    "fails closed by default: with the plane down or a wrong token, rm -rf is refused and the folder survives",
    CLI,
    async () => {
      const prepare = (work: string) => {
        mkdirSync(path.join(work, "precious"));
        writeFileSync(path.join(work, "precious", "data.txt"), "keep me");
      };
      const script = [bash("rm -rf precious"), { text: "Done." }];
      const down = await session(script, {
        settings: await settingsFor(`http://127.0.0.1:${await freePort()}`),
        prepare,
      });
      expect(existsSync(path.join(down.work, "precious", "data.txt"))).toBe(true);
      expect(down.api.main()).toHaveLength(0);
      // Claude Code's own words: an http hook with onFailure "block" refuses when it gets no answer.
      expect(String(down.run.result?.["result"])).toMatch(
        /blocking because onFailure is "block"\s+connect ECONNREFUSED/,
      );
      const refused = await session(script, { token: "geode_agent_wrong", prepare });
      expect(existsSync(path.join(refused.work, "precious", "data.txt"))).toBe(true);
      expect(refused.api.main()).toHaveLength(0);
      // ... and when the gateway refuses the token.
      expect(String(refused.run.result?.["result"])).toMatch(
        /blocking because onFailure is "block"\s+HTTP 401 from/,
      );
    },
  );

  it("--fail-open settings let a call go on with a wrong token: rm -rf runs", CLI, async () => {
    const open = await session([bash("rm -rf precious"), { text: "Done." }], {
      settings: await settingsFor(plane.gateway().url, "--fail-open"),
      token: "geode_agent_wrong",
      prepare: (work) => mkdirSync(path.join(work, "precious")),
    });
    expect(existsSync(path.join(open.work, "precious"))).toBe(false);
  });

  it("--check reports the settings' fail modes; settings that turn hooks off are named", CLI, async () => {
    const file = path.join(settingsDir, "checked.json");
    const at = { GEODE_AGENT_TOKEN: plane.token() };
    const connect = (...argv: string[]) =>
      plane.geode(["connect", "claude-code", "--url", plane.gateway().url, "--write", file, ...argv], at);
    const written = await connect();
    expect(written.code, written.err).toBe(0);
    expect(written.out).toMatch(/^wrote fail-closed hooks for 15 Claude Code events to /);
    const closed = await connect("--check");
    expect(closed.code, closed.err).toBe(0);
    expect(closed.out).toMatch(
      /^ok: 15 hooks in the settings Claude Code reads here; the gateway at .* knows the token\n/,
    );
    expect(closed.out).toMatch(
      /\n {2}UserPromptSubmit +fail-closed\n {2}PreToolUse +fail-closed\n {2}PermissionRequest +fail-closed\n$/,
    );
    expect((await connect("--fail-open")).out).toMatch(/^wrote fail-open hooks for 15 Claude Code events/);
    expect((await connect("--check")).out).toMatch(
      /3 of 3 guarded hooks fail open[\s\S]* {2}PreToolUse +fail-open\n/,
    );
    writeFileSync(file, JSON.stringify({ ...JSON.parse(readFileSync(file, "utf8")), disableAllHooks: true }));
    const off = await connect();
    expect(off.code).toBe(1);
    expect(off.err).toMatch(
      /^the hooks are written, but Claude Code will not run them: .* sets disableAllHooks/,
    );
    expect((await connect("--check")).err).toMatch(/sets disableAllHooks: Claude Code runs no hook/);
  });

  it("an unknown token gets 401 and nothing is invoked", CLI, async () => {
    const seen: HookEnvelope[] = [];
    await plane.scope().serve(HookName.PreToolUse, { name: "observer-401" }, (e) => {
      seen.push(e);
      return null;
    });
    const { sessionId } = await session([bash("echo hi"), { text: "Done." }], { token: "geode_agent_wrong" });
    expect(seen).toEqual([]);
    const db = new pg.Client({ connectionString: env().databaseUrl });
    await db.connect();
    try {
      const rows = await db.query(
        `select count(*)::int as n from "${env().ns}".activity_events where session_id = $1`,
        [sessionId],
      );
      expect(rows.rows[0]).toEqual({ n: 0 });
    } finally {
      await db.end();
    }
  });

  it(
    "the session is a run: its events, invocations and timeline in Postgres, its activity in the run's JSONL",
    CLI,
    async () => {
      await plane.scope().serve(HookName.PreToolUse, { name: "audit-tools" }, () => null);
      const { sessionId } = await session([bash("echo projected"), { text: "All done." }]);
      expect(sessionId).not.toBe("");
      const db = new pg.Client({ connectionString: env().databaseUrl });
      await db.connect();
      try {
        const q = async (sql: string) => (await db.query(sql, [sessionId])).rows;
        const schema = `"${env().ns}"`;
        const events =
          (await waitFor(async () => {
            const rows = await q(
              `select event, run_id from ${schema}.activity_events where session_id = $1 order by stream_seq`,
            );
            return rows.some((r) => r.event === "session_ended") ? rows : undefined;
          }, 60_000)) ?? [];
        const names = events.map((r) => r.event as string);
        for (const e of [
          "session_started",
          "user_input_received",
          "tool_exec_started",
          "tool_exec_ended",
          "extension_invoked",
          "turn_verify_passed",
          "session_ended",
        ])
          expect(names, e).toContain(e);
        expect(new Set(events.map((r) => r.run_id))).toEqual(new Set([sessionId]));
        const invocations = await q(
          `select name, extension, status from ${schema}.extension_invocations where session_id = $1`,
        );
        expect(invocations).toContainEqual({ name: "PreToolUse", extension: "audit-tools", status: "ok" });
        // The timeline is a stream of its own, projected by its own consumer: wait for its end too.
        const timeline =
          (await waitFor(async () => {
            const kinds = (
              await q(`select kind from ${schema}.session_events where session_id = $1 order by stream_seq`)
            ).map((r) => r.kind as string);
            return kinds.includes("session.ended") ? kinds : undefined;
          }, 60_000)) ?? [];
        expect(timeline[0]).toBe("session.started");
        expect(timeline).toEqual(
          expect.arrayContaining(["tool.called", "tool.completed", "verification.decided"]),
        );
        expect(timeline.at(-1)).toBe("session.ended");
        const file = path.join(plane.runsDir(), sessionId, "events.jsonl");
        // `geode events tail` shows the session like any other.
        const tail = await geode("events", "tail", "--session", sessionId, "--from-seq", "1", "--limit", "2");
        expect(tail.code, tail.err).toBe(0);
        expect(tail.out).toMatch(/session_started\s+agent-gateway/);
        expect(tail.out).toMatch(/user_input_received\s+agent-gateway/);
        // The run file mirrors the session's activity rows, from its start to its end.
        await waitFor(
          () => existsSync(file) && readFileSync(file, "utf8").includes('"event":"session_ended"'),
          30_000,
        );
        const lines = readFileSync(file, "utf8").trimEnd().split("\n");
        expect(lines.map((l) => (JSON.parse(l) as { event: string }).event)).toEqual(names);
        expect(lines.join("\n")).not.toMatch(/echo projected|geode-cc-work|transcript/);
      } finally {
        await db.end();
      }
    },
  );

  // Last, so it covers every session of the file: the notary, started now, reads both logs from
  // their first message.
  it(
    "the file's whole run verifies clean: geode audit verify --projection over every session",
    CLI,
    async () => {
      await plane.scope().serve(HookName.PreToolUse, { name: "audit-tools" }, () => null);
      const { run } = await session([bash("echo audited"), { text: "Done." }]);
      expect(run.code, run.stderr.slice(-1500)).toBe(0);
      const notary = await startTestNotary(env());
      cleanups.push(() => notary.stop());
      const logs = await notary.expectVerifiesClean({ projection: true });
      for (const l of logs) expect(l.leaves, l.log).toBeGreaterThan(0);
    },
  );
});
