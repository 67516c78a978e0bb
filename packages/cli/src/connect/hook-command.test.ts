import { spawn } from "node:child_process";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { freePort } from "@geode/local-server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { modesReport } from "./fail-mode.js";
import { commandFailMode, hookCommand, isGeodeHookCommand } from "./hook-command.js";

/** Runs a hook command as an agent does (`sh -c`), input on stdin, the token in its environment. */
function runCommand(command: string, token: string) {
  return new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn("sh", ["-c", command], {
      env: { PATH: process.env["PATH"], GEODE_AGENT_TOKEN: token },
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c));
    child.stderr.on("data", (c: Buffer) => (stderr += c));
    child.once("close", (status) => resolve({ status, stdout, stderr }));
    child.stdin.end('{"hook_event_name":"PreToolUse"}');
  });
}

// A stand-in gateway: 200 with a refusal for the known token, 401 for any other.
let server: Server;
let endpoint = "";
beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    const known = req.headers.authorization === "Bearer good";
    res.writeHead(known ? 200 : 401, { "content-type": "application/json" });
    res.end(known ? '{"decision":"deny","reason":"no"}' : '{"error":{"code":"policy_denied"}}');
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/codex/hook`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe("the hook command", () => {
  const command = (failClosed: boolean, url = endpoint) =>
    hookCommand({
      endpoint: url,
      failClosed,
      timeoutSeconds: 5,
      refusal: (r) => JSON.stringify({ reason: r }),
    });

  it("prints the gateway's answer and exits 0", async () => {
    expect(await runCommand(command(true), "good")).toEqual({
      status: 0,
      stdout: '{"decision":"deny","reason":"no"}',
      stderr: "",
    });
  });

  it("tells a refused token from a gateway that cannot be reached, and refuses both when fail-closed", async () => {
    const refused = await runCommand(command(true), "wrong");
    expect(refused.status).toBe(2);
    expect(refused.stderr).toMatch(
      /geode: the gateway refused the agent token \(401\).*a guarded call is refused/,
    );
    expect(JSON.parse(refused.stdout).reason).toMatch(/^geode: the gateway refused the agent token \(401\)/);
    const down = await runCommand(
      command(true, `http://127.0.0.1:${await freePort()}/v1/codex/hook`),
      "good",
    );
    expect(down.status).toBe(2);
    expect(down.stderr).toMatch(/geode: the agent gateway could not answer; a guarded call is refused/);
    // Not the refused-token line (a port such as 40139 may hold the digits).
    expect(down.stderr).not.toMatch(/\b401\b/);
    const open = await runCommand(command(false), "wrong");
    expect(open.status).toBe(1);
    expect(open.stdout).toBe("");
    expect(open.stderr).toMatch(/refused the agent token \(401\).*going on ungoverned/);
  });

  it("is recognised as geode's, with its fail mode", () => {
    for (const failClosed of [true, false]) {
      expect(isGeodeHookCommand(command(failClosed))).toBe(true);
      expect(commandFailMode(command(failClosed))).toBe(failClosed ? "fail-closed" : "fail-open");
    }
    // A command an older geode wrote is still found (and so replaced, never doubled).
    expect(
      isGeodeHookCommand(
        `curl -sS -f -H "authorization: Bearer \${GEODE_AGENT_TOKEN:-}" '${endpoint}' || { exit 1; }`,
      ),
    ).toBe(true);
    expect(commandFailMode("./lint.sh")).toBeNull();
    expect(commandFailMode("node geode.mjs hook-shim --url x --fail-closed")).toBe("fail-closed");
  });
});

describe("--check's report of fail modes", () => {
  it("lists each guarded hook, and says how many fail open", () => {
    expect(modesReport([])).toBe("");
    expect(
      modesReport([
        { event: "BeforeAgent", mode: "fail-closed" },
        { event: "BeforeTool", mode: "fail-open" },
      ]),
    ).toBe(
      "1 of 2 guarded hooks fail open (the call goes on, ungoverned, while the gateway cannot answer; geode connect without --fail-open writes fail-closed ones):\n  BeforeAgent  fail-closed\n  BeforeTool   fail-open\n",
    );
  });
});
