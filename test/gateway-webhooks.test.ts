import { readFileSync } from "node:fs";
import { connect, createServer } from "node:net";
import path from "node:path";
import { type AgentGateway, startAgentGateway } from "@geode/agent-gateway";
import { runCliCaptured } from "@geode/cli/testing";
import { decisionReason, HandlerRegistrationSchema, HookName, WebhookRecordSchema } from "@geode/contracts";
import type { HookDispatcher } from "@geode/hook-dispatcher";
import { createHookClient } from "@geode/runtime";
import { REPO_ROOT, type SpawnedProcess, spawnProgram, useTestEnv, waitFor } from "@geode/testing";
import { Kvm } from "@nats-io/kv";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startDispatcher } from "./hooks-support.js";

const env = useTestEnv();
const webhooksGuide = readFileSync(path.join(REPO_ROOT, "docs/webhooks.md"), "utf8").replace(/\s+/g, " ");
const geode = (...argv: string[]) => runCliCaptured(argv, { ...process.env, ...env().env });
const procs: SpawnedProcess[] = [];
const gateways: AgentGateway[] = [];
let dispatcher: HookDispatcher | undefined;

beforeAll(async () => {
  dispatcher = await startDispatcher(env());
  // Two gateway replicas, each on its own connection: an endpoint is still called once per call.
  for (const nc of [env().nc, await env().connect("gateway-2")])
    gateways.push(
      await startAgentGateway({ nc, names: env().names, config: { host: "127.0.0.1", port: 0 } }),
    );
});

afterAll(async () => {
  for (const p of procs) await p.stop("SIGTERM");
  for (const g of gateways) await g.stop();
  await dispatcher?.stop();
});

const hooks = () => createHookClient(env().nc, env().names);
const shell = (cmd: string, id: string) =>
  hooks().invoke(HookName.PreToolUse, { tool_name: "shell", arguments: { cmd } }, { tool_call_id: id });

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (address === null || typeof address === "string") throw new Error("no port");
  return address.port;
}

async function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

/** `geode handlers add …`: the secret is the last line of stdout. */
async function add(...args: string[]): Promise<string> {
  const r = await geode("handlers", "add", ...args);
  expect(r.code, r.err).toBe(0);
  return r.out.trimEnd().split("\n").at(-1) as string;
}

/** Every gateway serves `name`, and the dispatcher knows its registration. */
async function served(hook: string, name: string): Promise<void> {
  await waitFor(() => gateways.every((g) => g.webhooks.served().includes(`${hook}.${name}`)), 20_000);
  await waitFor(() => dispatcher?.handlers().some((h) => h.name === name), 20_000);
}

function start(command: string, args: string[], secret: string): SpawnedProcess {
  const p = spawnProgram(command, args, { GEODE_WEBHOOK_SECRET: secret });
  procs.push(p);
  return p;
}

const calls = (p: SpawnedProcess) => p.output().match(/^call\b/gm)?.length ?? 0;

describe("webhook handlers (geode handlers add --url): the agent gateway POSTs signed envelopes", () => {
  it("a Python endpoint (http.server) blocks and rewrites, called once per invocation by two gateways", async () => {
    const secret = await add(
      "--hook",
      "PreToolUse",
      "--name",
      "py-webhook",
      "--url",
      `http://127.0.0.1:${await freePort()}/`,
      "--match",
      "shell,shell.*",
      "--lease-ms",
      "1500",
    );
    expect(secret).toMatch(/^geode_whsec_[A-Za-z0-9_-]{43}$/);
    // The record keeps the secret for the gateways; the registration is the usual one.
    const webhooks = await new Kvm(env().nc).open(env().names.buckets.webhooks);
    const record = WebhookRecordSchema.parse((await webhooks.get("PreToolUse.py-webhook"))?.json());
    expect(record).toMatchObject({
      secret,
      failure_mode: "open",
      match: { tool_name: ["shell", "shell.*"] },
    });
    // The endpoint listens where the record points.
    const port = new URL(record.url).port;
    const endpoint = start("python3", ["examples/webhooks/python/guard.py", port], secret);
    await endpoint.waitForOutput(/listening on/);
    await served("PreToolUse", "py-webhook");

    const blocked = await shell("rm -rf /", "c1");
    expect(blocked.blocked).toBe(true);
    expect(blocked.decisions).toEqual([
      { handler: "py-webhook", action: "block", reason: "recursive deletes are not allowed here" },
    ]);
    // What an agent or a tool caller is told (docs/webhooks.md): the plane names the handler, once.
    expect(decisionReason(blocked, ["block"], "blocked")).toBe(
      "py-webhook: recursive deletes are not allowed here",
    );
    expect(webhooksGuide).toContain(
      "reaches Claude Code as `py-webhook: recursive deletes are not allowed here`",
    );
    const rewritten = await shell("sudo ls", "c2");
    expect(rewritten.payload).toEqual({ tool_name: "shell", arguments: { cmd: "ls" } });
    expect(rewritten.decision_sources).toEqual(["py-webhook"]);
    for (let i = 3; i <= 8; i++) expect((await shell("ls", `c${i}`)).handler_errors).toEqual([]);
    expect(calls(endpoint)).toBe(8);

    // The registration heart-beats while gateways serve it.
    const registry = await new Kvm(env().nc).open(env().names.buckets.hookHandlers);
    const read = async () =>
      HandlerRegistrationSchema.parse((await registry.get("PreToolUse.py-webhook"))?.json());
    const before = await read();
    await waitFor(async () => (await read()).heartbeat_at > before.heartbeat_at, 20_000);

    // rm: the webhook, its secret and its registration go; nobody calls the endpoint again.
    const rm = await geode("handlers", "rm", "PreToolUse", "py-webhook");
    expect(rm.code, rm.err).toBe(0);
    await waitFor(() => gateways.every((g) => g.webhooks.served().length === 0), 20_000);
    await waitFor(() => dispatcher?.handlers().length === 0, 20_000);
    // Purged: only the purge marker is left, no earlier value holding the secret.
    const history: string[] = [];
    for await (const e of await webhooks.history({ key: "PreToolUse.py-webhook" })) history.push(e.operation);
    expect(history).toEqual(["PURGE"]);
    expect((await shell("rm -rf /", "c9")).blocked).toBe(false);
    expect(calls(endpoint)).toBe(8);
  });

  it("an endpoint that checks the signature refuses another secret: a handler error, open goes on", async () => {
    const secret = await add(
      "--hook",
      "PreToolUse",
      "--name",
      "forged",
      "--url",
      `http://127.0.0.1:${await freePort()}/`,
    );
    const port = new URL(
      WebhookRecordSchema.parse(
        (await (await new Kvm(env().nc).open(env().names.buckets.webhooks)).get("PreToolUse.forged"))?.json(),
      ).url,
    ).port;
    // The endpoint holds a different secret than the one the gateway signs with.
    const endpoint = start("python3", ["examples/webhooks/python/guard.py", port], `${secret}x`);
    await endpoint.waitForOutput(/listening on/);
    await served("PreToolUse", "forged");
    const outcome = await shell("rm -rf /", "f1");
    expect(outcome).toMatchObject({ blocked: false, decisions: [] });
    expect(outcome.handler_errors).toEqual(["forged: webhook answered HTTP 401"]);
    expect(endpoint.output()).toMatch(/refused: bad signature/);
    expect(calls(endpoint)).toBe(0);
    expect((await geode("handlers", "rm", "PreToolUse", "forged")).code).toBe(0);
    await waitFor(() => dispatcher?.handlers().length === 0, 20_000);
  });

  it("a shell endpoint (socat + openssl) checks the signature and blocks", async () => {
    const port = await freePort();
    const secret = await add(
      "--hook",
      "PreToolUse",
      "--name",
      "sh-webhook",
      "--url",
      `http://127.0.0.1:${port}/hook`,
    );
    const endpoint = start("sh", ["examples/webhooks/shell/serve.sh", String(port)], secret);
    await endpoint.waitForOutput(/listening on/);
    await waitFor(() => portOpen(port), 20_000);
    await served("PreToolUse", "sh-webhook");
    const blocked = await shell("rm -rf /", "s1");
    expect(blocked.blocked).toBe(true);
    expect(blocked.decisions).toEqual([
      { handler: "sh-webhook", action: "block", reason: "the shell guard says no" },
    ]);
    const fine = await shell("ls", "s2");
    expect(fine).toMatchObject({ blocked: false, decisions: [], handler_errors: [] });
    expect(calls(endpoint)).toBe(2);
    expect(endpoint.output()).not.toMatch(/bad signature/);
    expect((await geode("handlers", "rm", "PreToolUse", "sh-webhook")).code).toBe(0);
    await waitFor(() => dispatcher?.handlers().length === 0, 20_000);
  });

  it("a closed webhook that times out blocks; an unreachable one too", async () => {
    // socat accepts and never answers: a hung endpoint.
    const port = await freePort();
    const hung = spawnProgram(
      "socat",
      [`TCP-LISTEN:${port},bind=127.0.0.1,reuseaddr,fork`, "SYSTEM:sleep 30"],
      {},
    );
    procs.push(hung);
    await waitFor(() => portOpen(port), 20_000);
    await add(
      ...["--hook", "PreToolUse", "--name", "slow-guard", "--url", `http://127.0.0.1:${port}/`],
      ...["--failure-mode", "closed", "--timeout-ms", "500"],
    );
    await served("PreToolUse", "slow-guard");
    const slow = await shell("ls", "t1");
    expect(slow.blocked).toBe(true);
    expect(slow.decisions).toEqual([
      {
        handler: "slow-guard",
        action: "block",
        reason: expect.stringMatching(/^failure_mode closed: .*500 ms/),
      },
    ]);
    expect((await geode("handlers", "rm", "PreToolUse", "slow-guard")).code).toBe(0);

    await add(
      ...[
        "--hook",
        "UserPromptSubmit",
        "--name",
        "gone-guard",
        "--url",
        `http://127.0.0.1:${await freePort()}/`,
      ],
      ...["--failure-mode", "closed"],
    );
    await served("UserPromptSubmit", "gone-guard");
    const gone = await hooks().invoke(HookName.UserPromptSubmit, { user_input: "hi" });
    expect(gone.blocked).toBe(true);
    expect(gone.decisions).toEqual([
      {
        handler: "gone-guard",
        action: "block",
        reason: "failure_mode closed: webhook unreachable (ECONNREFUSED)",
      },
    ]);
    expect((await geode("handlers", "rm", "UserPromptSubmit", "gone-guard")).code).toBe(0);
  });

  it("add refuses a name already registered and bad options; nothing is written then", async () => {
    await add("--hook", "Stop", "--name", "twice", "--url", "http://127.0.0.1:9/");
    const again = await geode(
      "handlers",
      "add",
      "--hook",
      "Stop",
      "--name",
      "twice",
      "--url",
      "http://127.0.0.1:9/",
    );
    expect(again.code).toBe(1);
    expect(again.err).toMatch(/already registered/);
    for (const [args, message] of [
      [["--hook", "Nope", "--name", "x", "--url", "http://a/"], /unknown hook/],
      [["--hook", "Stop", "--name", "x", "--url", "ftp://a/"], /http:\/\/ or https:\/\//],
      [["--hook", "Stop", "--name", "x", "--url", "http://a/", "--match", "fs.*"], /only for tool hooks/],
      [["--hook", "Stop", "--name", "x", "--url", "http://a/", "--failure-mode", "shut"], /open or closed/],
      [["--hook", "Stop", "--name", "x"], /required/],
    ] as const) {
      const r = await geode("handlers", "add", ...args);
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.err).toMatch(message);
    }
    const ls = await geode("handlers", "ls", "--json");
    expect((JSON.parse(ls.out) as Array<{ name: string }>).map((r) => r.name)).toEqual(["twice"]);
    expect((await geode("handlers", "rm", "Stop", "twice")).code).toBe(0);
  });
});
