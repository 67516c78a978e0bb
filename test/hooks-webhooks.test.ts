import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { runCliCaptured } from "@geode/cli/testing";
import {
  decisionReason,
  HandlerRegistrationSchema,
  HookName,
  WebhookRecordSchema,
  webhookSignature,
} from "@geode/contracts";
import { type HookDispatcher, startHookDispatcher } from "@geode/hook-dispatcher";
import { freePort, portOpen } from "@geode/local-server";
import { createHookClient } from "@geode/runtime";
import { verifyWebhookSignature } from "@geode/sdk";
import { REPO_ROOT, type SpawnedProcess, spawnProgram, useTestEnv, waitFor } from "@geode/testing";
import { Kvm } from "@nats-io/kv";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type SecuredNats, startSecuredNats } from "./security-support.js";

const env = useTestEnv();
const webhooksGuide = readFileSync(path.join(REPO_ROOT, "docs/webhooks.md"), "utf8").replace(/\s+/g, " ");
// The endpoints listen on loopback: both the CLI and the dispatchers must allow it.
const ALLOW = { GEODE_WEBHOOK_ALLOW: "loopback" };
const geode = (...argv: string[]) => runCliCaptured(argv, { ...process.env, ...env().env, ...ALLOW });
const procs: SpawnedProcess[] = [];
const dispatchers: HookDispatcher[] = [];

beforeAll(async () => {
  // Two dispatcher replicas, each on its own connection: an endpoint is still called once per call.
  for (const nc of [env().nc, await env().connect("dispatcher-2")])
    dispatchers.push(
      await startHookDispatcher({ nc, names: env().names, webhooks: { allow: ["loopback"] } }),
    );
});

afterAll(async () => {
  for (const p of procs) await p.stop("SIGTERM");
  for (const d of dispatchers) await d.stop();
});

const hooks = () => createHookClient(env().nc, env().names);
const shell = (cmd: string, id: string) =>
  hooks().invoke(HookName.PreToolUse, { tool_name: "shell", arguments: { cmd } }, { tool_call_id: id });

/** `geode handlers add …`: the secret is the last line of stdout. */
async function add(...args: string[]): Promise<string> {
  const r = await geode("handlers", "add", ...args);
  expect(r.code, r.err).toBe(0);
  return r.out.trimEnd().split("\n").at(-1) as string;
}

/** Every dispatcher serves `name` and knows its registration. */
async function served(hook: string, name: string): Promise<void> {
  await waitFor(() => dispatchers.every((d) => d.webhooks.served().includes(`${hook}.${name}`)), 20_000);
  await waitFor(() => dispatchers.every((d) => d.handlers().some((h) => h.name === name)), 20_000);
}

/** No dispatcher knows a registration any more. */
const forgotten = () => waitFor(() => dispatchers.every((d) => d.handlers().length === 0), 20_000);

function start(
  command: string,
  args: string[],
  secret: string,
  more: Record<string, string> = {},
): SpawnedProcess {
  const p = spawnProgram(command, args, { GEODE_WEBHOOK_SECRET: secret, ...more });
  procs.push(p);
  return p;
}

const calls = (p: SpawnedProcess) => p.output().match(/^call\b/gm)?.length ?? 0;

describe("webhook handlers (geode handlers add --url): the hook-dispatcher POSTs signed envelopes", () => {
  it("a Python endpoint (http.server) blocks and rewrites, called once per invocation by two dispatchers", async () => {
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
    // The record keeps the secret for the dispatchers; the registration is the usual one.
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

    // The registration heart-beats while dispatchers serve it.
    const registry = await new Kvm(env().nc).open(env().names.buckets.hookHandlers);
    const read = async () =>
      HandlerRegistrationSchema.parse((await registry.get("PreToolUse.py-webhook"))?.json());
    const before = await read();
    await waitFor(async () => (await read()).heartbeat_at > before.heartbeat_at, 20_000);

    // rm: the webhook, its secret and its registration go; nobody calls the endpoint again.
    const rm = await geode("handlers", "rm", "PreToolUse", "py-webhook");
    expect(rm.code, rm.err).toBe(0);
    await waitFor(() => dispatchers.every((d) => d.webhooks.served().length === 0), 20_000);
    await forgotten();
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
    // The endpoint holds a different secret than the one the dispatchers sign with.
    const endpoint = start("python3", ["examples/webhooks/python/guard.py", port], `${secret}x`);
    await endpoint.waitForOutput(/listening on/);
    await served("PreToolUse", "forged");
    const outcome = await shell("rm -rf /", "f1");
    expect(outcome).toMatchObject({ blocked: false, decisions: [] });
    expect(outcome.handler_errors).toEqual(["forged: webhook answered HTTP 401"]);
    expect(endpoint.output()).toMatch(/refused: bad signature/);
    expect(calls(endpoint)).toBe(0);
    expect((await geode("handlers", "rm", "PreToolUse", "forged")).code).toBe(0);
    await forgotten();
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
    await forgotten();
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

  it("a TypeScript endpoint checks each delivery with the SDK's verifyWebhookSignature and drops a replay", async () => {
    let secret = "";
    const seen = new Set<string>();
    const captured: Array<{ headers: http.IncomingHttpHeaders; body: Buffer }> = [];
    const server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const body = Buffer.concat(chunks);
        captured.push({ headers: req.headers, body });
        const answer = (status: number, json: unknown) => {
          res.writeHead(status, { "content-type": "application/json" });
          res.end(JSON.stringify(json));
        };
        const v = verifyWebhookSignature(secret, req.headers, body);
        if (!v.ok) return answer(401, { error: v.reason });
        if (seen.has(v.delivery)) return answer(409, { error: "replayed delivery" });
        seen.add(v.delivery);
        answer(200, { decision: { action: "block", reason: "typescript says no" } });
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    try {
      secret = await add("--hook", "PreToolUse", "--name", "ts-webhook", "--url", url);
      await served("PreToolUse", "ts-webhook");
      for (const id of ["t1", "t2"])
        expect((await shell("ls", id)).decisions).toEqual([
          { handler: "ts-webhook", action: "block", reason: "typescript says no" },
        ]);
      const ids = captured.map((c) => c.headers["geode-delivery"]);
      expect(ids).toHaveLength(2);
      expect(new Set(ids).size).toBe(2);
      for (const id of ids)
        expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);

      // A captured delivery sent again: refused as a replay; under another id: the signature fails.
      const first = captured[0] as { headers: http.IncomingHttpHeaders; body: Buffer };
      const resend = async (headers: Record<string, string>) => {
        const res = await fetch(url, { method: "POST", headers, body: first.body });
        return { status: res.status, body: await res.json() };
      };
      const signed = {
        "Geode-Timestamp": String(first.headers["geode-timestamp"]),
        "Geode-Delivery": String(first.headers["geode-delivery"]),
        "Geode-Signature": String(first.headers["geode-signature"]),
      };
      expect(await resend(signed)).toEqual({ status: 409, body: { error: "replayed delivery" } });
      expect(await resend({ ...signed, "Geode-Delivery": randomUUID() })).toEqual({
        status: 401,
        body: { error: "the signature does not match" },
      });
      // Signed with the right secret, ten minutes ago: too old.
      const old = String(Date.now() - 600_000);
      const id = randomUUID();
      expect(
        await resend({
          "Geode-Timestamp": old,
          "Geode-Delivery": id,
          "Geode-Signature": webhookSignature(secret, old, id, first.body),
        }),
      ).toEqual({ status: 401, body: { error: "the timestamp is 600 s old (at most 300 s either way)" } });
      expect((await geode("handlers", "rm", "PreToolUse", "ts-webhook")).code).toBe(0);
      await forgotten();
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("both example endpoints refuse an old timestamp and a tampered delivery id, and drop a replayed delivery", async () => {
    const secret = "geode_whsec_examples-0123456789abcdefghijklmnop";
    const seenDir = mkdtempSync(path.join(tmpdir(), "geode-seen-"));
    const [pyPort, shPort] = [await freePort(), await freePort()];
    const py = start("python3", ["examples/webhooks/python/guard.py", String(pyPort)], secret);
    const sh = start("sh", ["examples/webhooks/shell/serve.sh", String(shPort)], secret, {
      GEODE_WEBHOOK_SEEN_DIR: seenDir,
    });
    await py.waitForOutput(/listening on/);
    await sh.waitForOutput(/listening on/);
    await waitFor(() => portOpen(shPort), 20_000);
    const body = JSON.stringify({
      schema_version: "geode.public-hook.v2",
      name: "PreToolUse",
      correlation: { tool_call_id: "r1" },
      payload: { tool_name: "shell", arguments: { cmd: "ls" } },
    });
    const post = async (port: number, timestamp: string, delivery: string, signedDelivery = delivery) => {
      const res = await fetch(`http://127.0.0.1:${port}/`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "Geode-Timestamp": timestamp,
          "Geode-Delivery": delivery,
          "Geode-Signature": webhookSignature(secret, timestamp, signedDelivery, body),
        },
        body,
      });
      await res.text();
      return res.status;
    };
    try {
      for (const [port, p] of [
        [pyPort, py],
        [shPort, sh],
      ] as const) {
        const now = String(Date.now());
        const id = randomUUID();
        expect(await post(port, now, id)).toBe(200);
        expect(await post(port, now, id)).toBe(409);
        expect(await post(port, String(Date.now() - 6 * 60_000), randomUUID())).toBe(401);
        // Another id on a captured body and signature: the signature no longer checks out.
        expect(await post(port, now, randomUUID(), id)).toBe(401);
        // The endpoint's lines come through a pipe, maybe after its answers: the last one first.
        await p.waitForOutput(/refused: bad signature/, 10_000);
        expect(calls(p)).toBe(1);
        expect(p.output()).toMatch(/refused: replayed delivery\nrefused: stale timestamp\n/);
      }
    } finally {
      rmSync(seenDir, { recursive: true, force: true });
    }
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

describe("webhook handlers on a secured NATS, each component as its own user", () => {
  let secured: SecuredNats;
  let dispatcher: HookDispatcher;
  beforeAll(async () => {
    secured = await startSecuredNats({ namespace: env().ns });
    dispatcher = await startHookDispatcher({
      nc: await secured.as("hook-dispatcher"),
      names: env().names,
      webhooks: { allow: ["loopback"] },
    });
  });
  afterAll(async () => {
    await dispatcher?.stop();
    await secured?.stop();
  });

  it("the operator adds and removes, the hook-dispatcher serves and beats, the runtime's call is blocked", async () => {
    const operator = (...argv: string[]) =>
      runCliCaptured(argv, { ...process.env, ...env().env, ...ALLOW, ...secured.envOf("operator") });
    const port = await freePort();
    const added = await operator(
      ...["handlers", "add", "--hook", "PreToolUse", "--name", "sec-webhook"],
      ...["--url", `http://127.0.0.1:${port}/`, "--lease-ms", "900"],
    );
    expect(added.code, added.err).toBe(0);
    const endpoint = start(
      "python3",
      ["examples/webhooks/python/guard.py", String(port)],
      added.out.trimEnd().split("\n").at(-1) as string,
    );
    await endpoint.waitForOutput(/listening on/);
    await waitFor(() => dispatcher.webhooks.served().includes("PreToolUse.sec-webhook"), 20_000);
    await waitFor(() => dispatcher.handlers().some((h) => h.name === "sec-webhook"), 20_000);

    const runtime = createHookClient(await secured.as("runtime"), env().names);
    const blocked = await runtime.invoke(
      HookName.PreToolUse,
      { tool_name: "shell", arguments: { cmd: "rm -rf /" } },
      { tool_call_id: "sec-1" },
    );
    expect(blocked.decisions).toEqual([
      { handler: "sec-webhook", action: "block", reason: "recursive deletes are not allowed here" },
    ]);
    // Its lease (900 ms) is kept alive by the dispatcher's heartbeats, written as its own user.
    const registry = await new Kvm(await secured.as("operator")).open(env().names.buckets.hookHandlers);
    const beat = async () =>
      HandlerRegistrationSchema.parse((await registry.get("PreToolUse.sec-webhook"))?.json()).heartbeat_at;
    const first = await beat();
    await waitFor(async () => (await beat()) > first, 20_000);

    const rm = await operator("handlers", "rm", "PreToolUse", "sec-webhook");
    expect(rm.code, rm.err).toBe(0);
    await waitFor(() => dispatcher.webhooks.served().length === 0, 20_000);
    await waitFor(() => dispatcher.handlers().length === 0, 20_000);
    expect(calls(endpoint)).toBe(1);
    expect(secured.violations).toEqual([]);
  });
});
