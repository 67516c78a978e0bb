import http from "node:http";
import type { AddressInfo } from "node:net";
import { runCliCaptured } from "@geode/cli/testing";
import { HookName } from "@geode/contracts";
import { type HookDispatcher, startHookDispatcher } from "@geode/hook-dispatcher";
import { createHookClient } from "@geode/runtime";
import { useTestEnv, waitFor } from "@geode/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// Webhook URLs may not reach internal addresses unless the configuration allows them: checked by
// `geode handlers add`, and again by the dispatcher on the resolved address of each call.
const env = useTestEnv();
const geode = (allow: string | undefined, ...argv: string[]) =>
  runCliCaptured(argv, {
    ...process.env,
    ...env().env,
    ...(allow === undefined ? {} : { GEODE_WEBHOOK_ALLOW: allow }),
  });
const add = (allow: string | undefined, hook: string, name: string, url: string, ...more: string[]) =>
  geode(allow, "handlers", "add", "--hook", hook, "--name", name, "--url", url, ...more);

let dispatcher: HookDispatcher;
// A real endpoint on loopback that counts what reaches it.
let endpoint: http.Server;
let port = 0;
let reached = 0;

beforeAll(async () => {
  // The default: public addresses only.
  dispatcher = await startHookDispatcher({ nc: env().nc, names: env().names });
  endpoint = http.createServer((req, res) => {
    reached++;
    req.resume();
    req.on("end", () => res.end(JSON.stringify({ decision: null })));
  });
  await new Promise<void>((resolve) => endpoint.listen(0, "127.0.0.1", resolve));
  port = (endpoint.address() as AddressInfo).port;
});

afterAll(async () => {
  await dispatcher?.stop();
  await new Promise((resolve) => endpoint?.close(resolve));
});

const served = (key: string) =>
  waitFor(() => dispatcher.webhooks.served().includes(key) && dispatcher.handlers().length > 0, 20_000);

describe("webhook addresses", () => {
  it("geode handlers add refuses each internal address in one line, exit 2, and writes nothing", async () => {
    const always: Array<[string, string]> = [
      ["http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a cloud metadata address"],
      ["http://[fd00:ec2::254]/latest/", "fd00:ec2::254 is a cloud metadata address"],
      [
        "http://metadata.google.internal/computeMetadata/v1/",
        "metadata.google.internal is a cloud metadata service",
      ],
      ["http://169.254.10.1/", "169.254.10.1 is a link-local address"],
      ["http://[fe80::1]/", "fe80::1 is a link-local address"],
      ["http://0.0.0.0:4222/", "0.0.0.0 is an unspecified address"],
      ["http://[::]/", ":: is an unspecified address"],
    ];
    const loopback: Array<[string, string]> = [
      ["http://127.0.0.1:4222/", "127.0.0.1 is a loopback address"],
      ["http://[::1]:8080/", "::1 is a loopback address"],
      ["http://2130706433/", "127.0.0.1 is a loopback address"],
      ["http://[::ffff:127.0.0.1]/", "::ffff:7f00:1 is a loopback address"],
      ["http://localhost:5432/", "localhost resolves to"],
    ];
    const privates: Array<[string, string]> = [
      ["http://10.0.0.5/", "10.0.0.5 is a private address"],
      ["http://192.168.1.10:8080/", "192.168.1.10 is a private address"],
      ["http://[fd12:3456::1]/", "fd12:3456::1 is a private address"],
    ];
    const refused = async (allow: string | undefined, url: string, why: string) => {
      const r = await add(allow, "Stop", "internal", url);
      expect(r.code, `${url} (allow ${allow})`).toBe(2);
      expect(r.err.trimEnd().split("\n"), url).toHaveLength(1);
      expect(r.err, url).toContain(`--url refused: ${why}`);
    };
    for (const [url, why] of [...always, ...loopback, ...privates]) await refused(undefined, url, why);
    expect((await add(undefined, "Stop", "internal", "http://127.0.0.1:4222/")).err).toContain(
      "GEODE_WEBHOOK_ALLOW=loopback allows it",
    );
    for (const [url, why] of [...always, ...privates]) await refused("loopback", url, why);
    for (const [url, why] of always) await refused("loopback,private", url, why);
    const ls = await geode(undefined, "handlers", "ls", "--json");
    expect(JSON.parse(ls.out)).toEqual([]);

    // Allowed by the switch: loopback (as written or resolved), then private addresses too.
    for (const [i, [url]] of loopback.entries()) {
      const r = await add("loopback", "Stop", `lo-${i}`, url);
      expect(r.code, `${url}: ${r.err}`).toBe(0);
      expect((await geode(undefined, "handlers", "rm", "Stop", `lo-${i}`)).code).toBe(0);
    }
    const priv = await add("loopback,private", "Stop", "priv", "http://10.0.0.5/");
    expect(priv.code, priv.err).toBe(0);
    expect((await geode(undefined, "handlers", "rm", "Stop", "priv")).code).toBe(0);

    const bad = await add("everything", "Stop", "x", "http://10.0.0.5/");
    expect(bad.code).not.toBe(0);
    expect(bad.err).toMatch(/GEODE_WEBHOOK_ALLOW must list loopback and\/or private/);
  });

  it("each call checks the resolved address: a name resolving to loopback is refused, the failure mode applies, the endpoint is never reached", async () => {
    // Registered with the switch (as from another machine's CLI); this dispatcher has none.
    const closed = await add(
      "loopback",
      "PreToolUse",
      "lh-guard",
      `http://localhost:${port}/`,
      "--failure-mode",
      "closed",
    );
    expect(closed.code, closed.err).toBe(0);
    const open = await add("loopback", "UserPromptSubmit", "lh-open", `http://127.0.0.1:${port}/`);
    expect(open.code, open.err).toBe(0);
    await served("PreToolUse.lh-guard");
    await served("UserPromptSubmit.lh-open");
    const hooks = createHookClient(env().nc, env().names);

    const blocked = await hooks.invoke(HookName.PreToolUse, { tool_name: "shell", arguments: { cmd: "ls" } });
    expect(blocked.blocked).toBe(true);
    expect(blocked.decisions).toEqual([
      {
        handler: "lh-guard",
        action: "block",
        reason: expect.stringMatching(
          /^failure_mode closed: webhook refused: localhost resolves to (127\.0\.0\.1|::1), a loopback address$/,
        ),
      },
    ]);
    const goesOn = await hooks.invoke(HookName.UserPromptSubmit, { user_input: "hi" });
    expect(goesOn).toMatchObject({ blocked: false, decisions: [] });
    expect(goesOn.handler_errors).toEqual(["lh-open: webhook refused: 127.0.0.1 is a loopback address"]);
    expect(reached).toBe(0);

    // The same webhooks with the switch on the dispatcher: the endpoint is reached.
    await dispatcher.stop();
    dispatcher = await startHookDispatcher({
      nc: env().nc,
      names: env().names,
      webhooks: { allow: ["loopback"] },
    });
    await served("PreToolUse.lh-guard");
    const allowed = await hooks.invoke(HookName.PreToolUse, { tool_name: "shell", arguments: { cmd: "ls" } });
    expect(allowed).toMatchObject({ blocked: false, decisions: [], handler_errors: [] });
    expect(reached).toBe(1);
    for (const [hook, name] of [
      ["PreToolUse", "lh-guard"],
      ["UserPromptSubmit", "lh-open"],
    ])
      expect((await geode(undefined, "handlers", "rm", hook as string, name as string)).code).toBe(0);
  });
});
