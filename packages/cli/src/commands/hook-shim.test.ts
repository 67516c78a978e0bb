import { spawn } from "node:child_process";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { CLAUDE_CODE_HOOK_PATH, CODEX_HOOK_PATH, GEMINI_CLI_HOOK_PATH } from "@geode/contracts";
import { freePort } from "@geode/local-server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hookEndpoint, refusalOf } from "./hook-shim.js";

const BIN = path.resolve(import.meta.dirname, "../../bin/geode.mjs");

/** Runs the real `geode hook-shim` with `input` on stdin. */
function shim(args: string[], input: string, env: Record<string, string> = {}) {
  return new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
    const child = spawn(process.execPath, [BIN, "hook-shim", ...args], {
      env: { PATH: process.env["PATH"] ?? "", ...env },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    child.stdout.on("data", (c: Buffer) => (out += c));
    child.stderr.on("data", (c: Buffer) => (err += c));
    child.on("exit", (code) => resolve({ code, out, err }));
    child.stdin.end(input);
  });
}

// A stand-in gateway: answers by the input's hook_event_name; records what it got.
let server: Server;
let url = "";
const got: Array<{ auth: string | undefined; body: unknown }> = [];
const requests: Array<{ path: string | undefined; headers: string[] }> = [];
const answers: Record<string, [number, unknown]> = {
  PreToolUse: [
    200,
    {
      hookSpecificOutput: {
        hookEventName: "PreToolUse",
        permissionDecision: "deny",
        permissionDecisionReason: "no rm",
      },
    },
  ],
  Stop: [200, { decision: "block", reason: "add tests" }],
  PostToolUse: [200, { hookSpecificOutput: { hookEventName: "PostToolUse", additionalContext: "note" } }],
  BeforeTool: [200, { decision: "deny", reason: "no rm" }],
  UserPromptSubmit: [401, { error: { code: "policy_denied", message: "missing or unknown bearer token" } }],
};

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c));
    req.on("end", () => {
      const parsed = JSON.parse(body) as { hook_event_name: string };
      got.push({ auth: req.headers.authorization, body: parsed });
      requests.push({ path: req.url, headers: Object.keys(req.headers) });
      const [status, answer] = answers[parsed.hook_event_name] ?? [200, {}];
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(answer));
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

// Each case starts real CLI processes: give them room on a loaded machine.
const SPAWNS = { timeout: 120_000 };

describe("geode hook-shim", () => {
  it("uses the contract's paths", () => {
    expect(hookEndpoint("http://gw:4280", {})).toBe(`http://gw:4280${CLAUDE_CODE_HOOK_PATH}`);
    expect(hookEndpoint("http://gw:4280", {}, "codex")).toBe(`http://gw:4280${CODEX_HOOK_PATH}`);
    expect(hookEndpoint("https://gw/custom/path", {})).toBe("https://gw/custom/path");
    expect(hookEndpoint(undefined, { GEODE_GATEWAY_ADDR: "0.0.0.0:5000" })).toBe(
      `http://127.0.0.1:5000${CLAUDE_CODE_HOOK_PATH}`,
    );
    expect(refusalOf({ hookSpecificOutput: { decision: { behavior: "deny", message: "m" } } })).toBe("m");
    expect(refusalOf({ hookSpecificOutput: { permissionDecision: "allow" } })).toBeNull();
  });

  it("forwards stdin with the token and prints the gateway's output (exit 0)", SPAWNS, async () => {
    const input = JSON.stringify({ session_id: "s", hook_event_name: "PostToolUse", tool_name: "Bash" });
    const r = await shim(["--url", url], input, { GEODE_AGENT_TOKEN: "tok-1" });
    expect(r).toMatchObject({ code: 0, err: "" });
    expect(JSON.parse(r.out)).toEqual(answers["PostToolUse"]![1]);
    expect(got.at(-1)).toEqual({ auth: "Bearer tok-1", body: JSON.parse(input) });
  });

  it("exits 2 with the reason on stderr when the gateway denies or blocks", SPAWNS, async () => {
    const deny = await shim(
      ["--url", url],
      JSON.stringify({ session_id: "s", hook_event_name: "PreToolUse" }),
    );
    expect(deny).toEqual({ code: 2, out: "", err: "no rm\n" });
    const block = await shim(["--url", url], JSON.stringify({ session_id: "s", hook_event_name: "Stop" }));
    expect(block).toEqual({ code: 2, out: "", err: "add tests\n" });
  });

  it(
    "--agent gemini-cli: its endpoint, Gemini's own refusal JSON on stdout (exit 0), no environment sent",
    SPAWNS,
    async () => {
      const input = JSON.stringify({
        session_id: "s",
        hook_event_name: "BeforeTool",
        tool_name: "run_shell_command",
      });
      const r = await shim(["--agent", "gemini-cli", "--url", url], input, {
        GEODE_AGENT_TOKEN: "tok-2",
        GEMINI_API_KEY: "gemini-key-never-sent",
      });
      expect(r).toEqual({
        code: 0,
        out: `${JSON.stringify({ decision: "deny", reason: "no rm" })}\n`,
        err: "",
      });
      expect(requests.at(-1)?.path).toBe(GEMINI_CLI_HOOK_PATH);
      expect(JSON.stringify(got.at(-1))).not.toContain("gemini-key-never-sent");
      expect(requests.at(-1)?.headers.sort()).toEqual([
        "authorization",
        "connection",
        "content-length",
        "content-type",
        "host",
      ]);
    },
  );

  it("an error answer or an unreachable gateway: exit 1, or 2 with --fail-closed", SPAWNS, async () => {
    const refused = await shim(
      ["--url", url],
      JSON.stringify({ session_id: "s", hook_event_name: "UserPromptSubmit" }),
    );
    expect(refused.code).toBe(1);
    expect(refused.err).toBe(
      "geode: the gateway refused the agent token (401): GEODE_AGENT_TOKEN is not set\n",
    );
    const wrong = await shim(
      ["--url", url, "--fail-closed"],
      JSON.stringify({ session_id: "s", hook_event_name: "UserPromptSubmit" }),
      { GEODE_AGENT_TOKEN: "geode_agent_wrong" },
    );
    expect(wrong.code).toBe(2);
    expect(wrong.err).toMatch(/^geode: the gateway refused the agent token \(401\): check GEODE_AGENT_TOKEN/);
    const dead = `http://127.0.0.1:${await freePort()}`;
    const input = JSON.stringify({ session_id: "s", hook_event_name: "PreToolUse" });
    const open = await shim(["--url", dead], input);
    expect(open.code).toBe(1);
    expect(open.err).toMatch(/cannot be reached/);
    const closed = await shim(["--url", dead, "--fail-closed"], input);
    expect(closed.code).toBe(2);
    expect(closed.out).toBe("");
  });
});
