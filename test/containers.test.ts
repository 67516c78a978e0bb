/**
 * The image and the compose stack on a real Docker engine, deployed as the README's "Deploy with
 * containers" section and docs/deploy.md write it: the image is built, the stack comes up healthy,
 * the demo, a guard on the host, Claude Code on the host and a crash are run against it, it stops
 * gracefully and leaves nothing; then the cluster profile loses a NATS node. The engine is this
 * machine's running one, or one started for the run and stopped at its end (test/docker-engine.ts);
 * where no registry answers, the base images are built locally and cached (infra/docker/local-bases.ts).
 */
import { randomUUID } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { RuntimeEventBus } from "@geode/bus";
import { names as buildNames, CLAUDE_CODE_HOOK_PATH, HookName, SERVICE_NAMES } from "@geode/contracts";
import { serveHook } from "@geode/sdk";
import { waitFor } from "@geode/testing";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BASE_IMAGES, ensureBaseImages } from "../infra/docker/local-bases.js";
import { privateInboxPrefix } from "../infra/nats/nats-roles.js";
import { runClaude, scratch, startAnthropicStandIn } from "./claude-code-support.js";
import {
  buildCaCerts,
  type ComposeStack,
  createStack,
  documentedCommands,
  keepBuildCache,
  pruneUntagged,
  runCommand,
  waitHealthy,
} from "./container-support.js";
import {
  type DockerEngine,
  dockerBridges,
  dockerIptables,
  enginePids,
  useDockerEngine,
} from "./docker-engine.js";

const README = documentedCommands("README.md", "## Deploy with containers");
const CLUSTER = documentedCommands("docs/deploy.md", "## The cluster profile");
const IMAGE = "geode-extension-plane:test";
const MIN = 60_000;
const ns = buildNames("geode");

let engine: DockerEngine;
const stacks: ComposeStack[] = [];
const open: NatsConnection[] = [];
/** Seconds each expensive step took, printed at the end for docs/deploy.md. */
const took: Record<string, number> = {};

async function timed<T>(what: string, f: () => Promise<T>): Promise<T> {
  const t0 = Date.now();
  try {
    return await f();
  } finally {
    took[what] = (Date.now() - t0) / 1000;
  }
}

const docker = (...args: string[]) => runCommand("docker", args, { env: engine.env, timeoutMs: 120_000 });

async function inspect(id: string, format: string): Promise<string> {
  const r = await docker("inspect", "-f", format, id);
  expect(r.code, r.stderr).toBe(0);
  return r.stdout.trim();
}

/** Connects to the stack's published NATS port as one of its users (with its own inbox prefix). */
async function natsAs(stack: ComposeStack, user: string, inbox = "_INBOX"): Promise<NatsConnection> {
  const nc = await connect({
    servers: `nats://127.0.0.1:${await stack.published("nats", 4222)}`,
    user,
    pass: stack.variable(`GEODE_NATS_PASS_${user.toUpperCase().replace(/[^A-Z0-9]/g, "_")}`),
    inboxPrefix: inbox,
  });
  open.push(nc);
  return nc;
}

async function runtimeBus(stack: ComposeStack): Promise<RuntimeEventBus> {
  // The stack's services made the streams; a bus that does not ask for them again publishes (with
  // its retries) while a lost stream leader is replaced.
  return RuntimeEventBus.create({
    nc: await natsAs(stack, "runtime"),
    names: ns,
    source: "container-test",
    provision: false,
  });
}

/** A handler outside the stack: the policy guard's own NATS user, with its private inbox prefix. */
const asGuard = (stack: ComposeStack) =>
  natsAs(stack, "handler-policy-guard", privateInboxPrefix("handler-policy-guard"));

/** Publishes `n` runtime events of one session as the runtime user; returns their ids. */
async function publishEvents(bus: RuntimeEventBus, session: string, n: number): Promise<string[]> {
  const ids = Array.from({ length: n }, () => randomUUID());
  const sent = await Promise.all(
    ids.map((id, i) => bus.emit("turn_completed", { i }, { session_id: session }, { id })),
  );
  expect(sent.every((e) => e !== null)).toBe(true);
  return ids;
}

/** The session's event ids in the container's PostgreSQL, once there are `n` of them. */
async function projected(
  stack: ComposeStack,
  session: string,
  n: number,
  timeoutMs = 60_000,
): Promise<string[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ids = (
      await stack.psql(`select event_id from geode.activity_events where session_id = '${session}'`)
    )
      .split("\n")
      .filter(Boolean);
    if (ids.length >= n || Date.now() > deadline) return ids;
    await new Promise((r) => setTimeout(r, 500));
  }
}

beforeAll(async () => {
  engine = await timed("engine", () => useDockerEngine());
  const outcome = await timed("base images", () =>
    ensureBaseImages(engine.env, (line) => process.stderr.write(`  ${line}\n`)),
  );
  process.stderr.write(
    `  Docker ${engine.version} (${engine.owned ? "started for this run" : "running"}); ${JSON.stringify(outcome)}\n`,
  );
}, 45 * MIN);

afterAll(async () => {
  for (const nc of open) await nc.close().catch(() => undefined);
  for (const s of stacks) await s.remove().catch(() => undefined);
  if (engine?.owned) await pruneUntagged(engine);
  await engine?.stop();
  process.stderr.write(`  container test timings (s): ${JSON.stringify(took)}\n`);
}, 5 * MIN);

describe("the compose stack, deployed as the README says", () => {
  let stack: ComposeStack;
  beforeAll(async () => {
    stack = await createStack(engine, "main");
    stacks.push(stack);
  });

  it("stops before starting anything when a secret is not set, naming it and how to set it", async () => {
    const bare = await createStack(engine, "bare");
    stacks.push(bare);
    expect((await bare.documented(README, "sh infra/docker/env.sh")).code).toBe(0);
    for (const [secret, profile] of [
      ["POSTGRES_PASSWORD", []],
      ["GEODE_CONSOLE_TOKEN", ["--profile", "console"]],
    ] as const) {
      const text = readFileSync(bare.envFile, "utf8");
      writeFileSync(bare.envFile, text.replace(new RegExp(`^${secret}=.*\\n`, "m"), ""));
      const r = await bare.compose([...profile, "up", "-d"]);
      expect(r.code, r.stdout).not.toBe(0);
      expect(r.stderr).toContain(secret);
      expect(r.stderr).toContain("sh infra/docker/env.sh");
      writeFileSync(bare.envFile, text);
    }
    expect(await bare.leftovers()).toEqual([]);
  });

  it(
    "builds one image: non-root, health-checked, labelled, under 100 MB above its base, no development files",
    async () => {
      expect((await stack.documented(README, "sh infra/docker/env.sh")).code).toBe(0);
      const env = { BUILD_CA_CERTS: buildCaCerts() };
      if (engine.owned) await timed("image stages", () => keepBuildCache(engine, env));
      const built = await timed("docker compose build", () =>
        stack.documented(README, "docker compose build", { env }),
      );
      expect(built.code, built.stderr.slice(-3_000)).toBe(0);
      expect(await inspect(IMAGE, "{{.Config.User}}")).toBe("node");
      expect(await inspect(IMAGE, "{{json .Config.Healthcheck.Test}}")).toBe(
        '["CMD","/app/infra/docker/entrypoint.sh","health"]',
      );
      const labels = JSON.parse(await inspect(IMAGE, "{{json .Config.Labels}}")) as Record<string, string>;
      expect(labels).toMatchObject({
        "org.opencontainers.image.title": "geode-extension-plane",
        "org.opencontainers.image.version": "0.1.0",
        "org.opencontainers.image.base.name": BASE_IMAGES.node,
      });
      const above =
        (Number(await inspect(IMAGE, "{{.Size}}")) - Number(await inspect(BASE_IMAGES.node, "{{.Size}}"))) /
        1e6;
      took["MB above the base"] = Math.round(above * 10) / 10;
      expect(above).toBeLessThan(100);
      // Nothing of the build: no source maps, declarations, TypeScript, test harness, PGlite or CA.
      const files = await docker(
        "run",
        "--rm",
        "--entrypoint",
        "sh",
        IMAGE,
        "-c",
        "find /app /tmp \\( -name '*.map' -o -name '*.d.ts' -o -name '*.ts' -o -name build-ca.pem \\) -print; ls /app/node_modules/.pnpm",
      );
      expect(files.code, files.stderr).toBe(0);
      expect(files.stdout).not.toMatch(
        /\.map$|\.d\.ts$|\.ts$|build-ca|^(typescript|vitest|vite|tsx|@electric-sql\+pglite|@biomejs|testcontainers)@/m,
      );
      const history = await docker("history", "--no-trunc", IMAGE);
      expect(history.stdout + (await inspect(IMAGE, "{{json .Config.Env}}"))).not.toContain(
        "BEGIN CERTIFICATE",
      );
      // Without PGlite, a command that would open the embedded database says what to set instead.
      const noPglite = await docker("run", "--rm", IMAGE, "geode", "audit", "--session", "x");
      expect(noPglite.stdout + noPglite.stderr).toMatch(/DATABASE_URL/);
    },
    40 * MIN,
  );

  it(
    "comes up healthy: NATS with the per-role users, PostgreSQL, every service, restarted unless stopped",
    async () => {
      const up = await timed("up (healthy)", async () => {
        const r = await stack.documented(README, "docker compose up -d");
        await waitHealthy(engine, stack, ["nats", "postgres", ...SERVICE_NAMES]);
        return r;
      });
      expect(up.code, up.stderr.slice(-3_000)).toBe(0);
      const ps = await stack.documented(README, "docker compose ps");
      for (const s of SERVICE_NAMES) expect(ps.stdout).toMatch(new RegExp(`${s}.*healthy`));
      for (const s of ["nats", "postgres", ...SERVICE_NAMES])
        expect(await inspect(await stack.container(s), "{{.HostConfig.RestartPolicy.Name}}"), s).toBe(
          "unless-stopped",
        );
      // The operator on this host, through the published port, as the README says.
      const health = await stack.documented(README, "geode health");
      expect(health.code, health.stdout + health.stderr).toBe(0);
      for (const s of SERVICE_NAMES) expect(health.stdout).toMatch(new RegExp(`${s}\\s+ok`));
      // And nobody gets in without a password.
      await expect(
        connect({ servers: `nats://127.0.0.1:${await stack.published("nats", 4222)}` }),
      ).rejects.toThrow(/Authorization/);
    },
    5 * MIN,
  );

  it(
    "runs the demo profile against its NATS and PostgreSQL: the session's rows are in the container's PostgreSQL",
    async () => {
      const r = await timed("demo", () =>
        stack.documented(README, "docker compose --profile demo run --rm demo"),
      );
      expect(r.code, r.stderr.slice(-4_000)).toBe(0);
      expect(r.stdout).toMatch(/\(17\/17 ran\)/);
      const m = /Postgres \(postgres\) activity rows of run (\S+): (\d+)/.exec(r.stdout);
      const demoNs = /GEODE_NAMESPACE=(demo_\w+)/.exec(r.stdout)?.[1];
      expect(m, r.stdout).not.toBeNull();
      const [, runId, rows] = m as RegExpExecArray;
      expect(Number(rows)).toBeGreaterThan(20);
      expect(
        (
          await stack.psql(`select count(*) from "${demoNs}".activity_events where run_id = '${runId}'`)
        ).trim(),
      ).toBe(rows);
    },
    5 * MIN,
  );

  it(
    "a guard handler on this host, through the published NATS port, blocks a tool call",
    async () => {
      const nc = await asGuard(stack);
      const seen: string[] = [];
      const guard = await serveHook(
        { nc, names: ns },
        HookName.PreToolUse,
        { name: "policy-guard", match: { tool_name: ["echo"] } },
        (e) => {
          seen.push(String(e.payload["tool_name"]));
          return { action: "block", reason: "no echo from this host" };
        },
      );
      try {
        const session = `guard-${randomUUID()}`;
        const r = await stack.geode([
          "tool",
          "call",
          "echo",
          "--session",
          session,
          "--args",
          '{"text":"hi"}',
          "--json",
        ]);
        expect(r.code, r.stderr).toBe(3);
        expect(JSON.parse(r.stdout)).toMatchObject({
          status: "blocked",
          executed: false,
          reason: expect.stringContaining("no echo from this host"),
        });
        expect(seen).toEqual(["echo"]);
        const audited = await projected(stack, session, 1);
        expect(audited.length).toBeGreaterThan(0);
      } finally {
        await guard.close();
      }
    },
    2 * MIN,
  );

  it(
    "the per-role users refuse a handler that tries to publish runtime events",
    async () => {
      const nc = await asGuard(stack);
      const operator = await jetstreamManager(await natsAs(stack, "operator"));
      const before = (await operator.streams.info(ns.eventsStream)).state.messages;
      await expect(
        jetstream(nc).publish(ns.event("turn_completed"), JSON.stringify({ id: "forged" })),
      ).rejects.toThrow(/Permissions Violation for Publish/);
      nc.publish(ns.event("turn_completed"), JSON.stringify({ id: "forged-plain" }));
      await nc.flush();
      expect((await operator.streams.info(ns.eventsStream)).state.messages).toBe(before);
    },
    2 * MIN,
  );

  it(
    "a service container that crashes is restarted, and every event published meanwhile is projected",
    async () => {
      const id = await stack.container("activity-recorder");
      const restarts = Number(await inspect(id, "{{.RestartCount}}"));
      const bus = await runtimeBus(stack);
      const session = `crash-${randomUUID()}`;
      // `docker kill` counts as a stop for Docker's restart policy; a crash is the process dying.
      const killedAt = Date.now();
      process.kill(Number(await inspect(id, "{{.State.Pid}}")), "SIGKILL");
      // The first events go out at once, while the recorder is down (Docker restarts it within a
      // second or so); the rest may meet the restarted one.
      const early = await publishEvents(bus, session, 10);
      const publishedEarly = Date.now();
      const ids = [...early, ...(await publishEvents(bus, session, 90))];
      // Docker learns of the death asynchronously: until it does, the old state still reads healthy.
      // Wait for the restart itself, then for the new process to be healthy.
      let count = restarts;
      await waitFor(async () => {
        count = Number(await inspect(id, "{{.RestartCount}}"));
        return count > restarts;
      }, 60_000);
      expect(count).toBe(restarts + 1);
      await waitHealthy(engine, stack, ["activity-recorder"]);
      // The early events were in the stream before the restarted recorder was consuming. Its
      // health can read healthy a moment before the new process logs its start: wait for the line.
      const lastStart = async () => {
        const logs = await docker("logs", "--since", new Date(publishedEarly - 60_000).toISOString(), id);
        const started = [
          ...(logs.stdout + logs.stderr).matchAll(/"time":"([^"]+)"[^\n]*"msg":"activity-recorder started"/g),
        ];
        return started.length === 0 ? 0 : new Date(started.at(-1)?.[1] as string).getTime();
      };
      let restartedAt = 0;
      await waitFor(async () => {
        restartedAt = await lastStart();
        return restartedAt > killedAt;
      }, 60_000);
      expect(restartedAt).toBeGreaterThan(publishedEarly);
      // Every event projected, each once.
      const rows = await projected(stack, session, ids.length);
      expect(new Set(rows)).toEqual(new Set(ids));
      expect(rows).toHaveLength(ids.length);
    },
    3 * MIN,
  );

  it(
    "the agent gateway in its container governs a real Claude Code session on this host",
    async () => {
      const gateway = `http://127.0.0.1:${await stack.published("agent-gateway", 4280)}`;
      const added = await stack.geode(["agents", "add", "claude"]);
      expect(added.code, added.stderr).toBe(0);
      const token = added.stdout.trimEnd().split("\n").at(-1) as string;
      await waitForToken(gateway, token);
      const dirs = scratch();
      const api = await startAnthropicStandIn([
        { tool: { name: "Bash", input: { command: "touch blocked.txt", description: "run it" } } },
        { text: "Could not do it." },
      ]);
      const guard = await serveHook(
        { nc: await asGuard(stack), names: ns },
        HookName.PreToolUse,
        { name: "policy-guard", match: { tool_name: ["Bash"] } },
        (e) =>
          JSON.stringify(e.payload["arguments"]).includes("blocked.txt")
            ? { action: "block", reason: "not that file" }
            : null,
      );
      try {
        const settings = path.join(dirs.home, "settings.json");
        const connected = await stack.geode([
          "connect",
          "claude-code",
          "--url",
          gateway,
          "--write",
          settings,
        ]);
        expect(connected.code, connected.stderr).toBe(0);
        const run = await runClaude({
          prompt: "Do the task.",
          settingsFile: settings,
          apiUrl: api.url,
          home: dirs.home,
          cwd: dirs.work,
          token,
          args: ["--allowedTools", "Bash"],
        });
        expect(run.result, run.stderr.slice(-2_000)).not.toBeNull();
        expect(existsSync(path.join(dirs.work, "blocked.txt"))).toBe(false);
        expect(api.main()[1]?.raw).toContain("policy-guard: not that file");
        const session = String(run.result?.["session_id"]);
        const events = await waitForRows(
          stack,
          `select event from geode.activity_events where session_id = '${session}'`,
          "session_ended",
        );
        expect(events).toEqual(
          expect.arrayContaining(["session_started", "extension_invoked", "session_ended"]),
        );
      } finally {
        await guard.close();
        await api.close();
        dirs.cleanup();
      }
    },
    5 * MIN,
  );

  it(
    "the console profile serves the operator console behind its token",
    async () => {
      const r = await stack.documented(README, "docker compose --profile console up -d");
      expect(r.code, r.stderr.slice(-2_000)).toBe(0);
      await waitHealthy(engine, stack, ["console"]);
      const url = `http://127.0.0.1:${await stack.published("console", 4281)}/api/me`;
      expect((await fetch(url)).status).toBe(401);
      const me = await fetch(url, {
        headers: { authorization: `Bearer ${stack.variable("GEODE_CONSOLE_TOKEN")}` },
      });
      expect(me.status).toBe(200);
    },
    3 * MIN,
  );

  it(
    "stop drains every service within its grace period: each exits 0 after draining, none is killed",
    async () => {
      const ids: Record<string, string> = {};
      for (const s of ["nats", "postgres", "console", ...SERVICE_NAMES]) ids[s] = await stack.container(s);
      const r = await timed("stop", () => stack.documented(README, "docker compose stop"));
      expect(r.code, r.stderr).toBe(0);
      expect(took["stop"]).toBeLessThan(20);
      for (const [s, id] of Object.entries(ids)) {
        expect(await inspect(id, "{{.State.Status}} {{.State.ExitCode}} {{.State.OOMKilled}}"), s).toBe(
          "exited 0 false",
        );
        if ((SERVICE_NAMES as readonly string[]).includes(s)) {
          // Its last log lines (stdout and stderr interleave: ordered by their own times).
          const logs = await docker("logs", "--tail", "20", id);
          const at = (msg: string) =>
            (logs.stdout + logs.stderr)
              .split("\n")
              .map((l) => /"time":"([^"]+)".*"msg":"([^"]+)"/.exec(l))
              .filter((m) => m?.[2] === msg)
              .map((m) => Date.parse(m?.[1] as string))
              .at(-1) ?? Number.NaN;
          expect(at(`${s} stopped`), s).toBeGreaterThanOrEqual(at(`${s} draining`));
        }
      }
    },
    3 * MIN,
  );

  it(
    "down -v leaves no container, volume or network",
    async () => {
      const r = await stack.documented(README, "docker compose down -v");
      expect(r.code, r.stderr).toBe(0);
      expect(await stack.leftovers()).toEqual([]);
    },
    3 * MIN,
  );
});

/** Until the gateway knows the token (it watches the agents bucket): 400 for an empty body, not 401. */
async function waitForToken(gateway: string, token: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const r = await fetch(`${gateway}${CLAUDE_CODE_HOOK_PATH}`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}` },
      body: "[]",
    });
    if (r.status !== 401) return;
    await new Promise((res) => setTimeout(res, 200));
  }
  throw new Error("the gateway never accepted the new agent token");
}

/** The first column of a query's rows, once one of them is `until`. */
async function waitForRows(stack: ComposeStack, sql: string, until: string): Promise<string[]> {
  for (let i = 0; ; i++) {
    const rows = (await stack.psql(sql)).split("\n").filter(Boolean);
    if (rows.includes(until) || i > 120) return rows;
    await new Promise((r) => setTimeout(r, 500));
  }
}

describe("the cluster profile, deployed as docs/deploy.md says", () => {
  it(
    "runs three JetStream nodes with three replicas of every stream, and goes on when one node is lost",
    async () => {
      const stack = await createStack(engine, "cluster");
      stacks.push(stack);
      expect((await stack.documented(CLUSTER, "sh infra/docker/env.sh --cluster")).code).toBe(0);
      const up = await timed("cluster up (healthy)", async () => {
        const r = await stack.documented(CLUSTER, "docker compose up -d");
        await waitHealthy(engine, stack, ["nats", "nats-2", "nats-3", "postgres", ...SERVICE_NAMES]);
        return r;
      });
      expect(up.code, up.stderr.slice(-3_000)).toBe(0);
      const jsm = await jetstreamManager(await natsAs(stack, "operator"));
      const events = await jsm.streams.info(ns.eventsStream);
      expect(events.config.num_replicas).toBe(3);
      // Lose the events stream's leader, unless that is nats-1, the node this host connects through.
      const leader = events.cluster?.leader ?? "";
      const lost = leader === "nats-1" ? "nats-2" : leader;
      const bus = await runtimeBus(stack);
      await docker("kill", await stack.container(lost));
      const session = `cluster-${randomUUID()}`;
      const ids = await timed("cluster: publish with a node lost", () => publishEvents(bus, session, 100));
      const stored = await timed("cluster: projected", () => projected(stack, session, ids.length, 120_000));
      expect(new Set(stored)).toEqual(new Set(ids));
      // While the streams elect new leaders, handlers cannot renew their leases in KV either, and a
      // closed handler whose lease ran out blocks calls (by design) until it beats again and the
      // dispatcher sees it: the plane must get there by itself, within a bound.
      const call = await timed("cluster: tool call", async () => {
        const until = Date.now() + 60_000;
        for (;;) {
          const r = await stack.geode(["tool", "call", "echo", "--args", '{"text":"still here"}', "--json"]);
          if (r.code === 0 || Date.now() > until) return r;
          await new Promise((res) => setTimeout(res, 1_000));
        }
      });
      // On a failure, what the services said while the node was lost.
      const said =
        call.code === 0
          ? ""
          : (await stack.compose(["logs", "--tail", "30", "hook-dispatcher", "tool-executor"])).stdout;
      expect(call.code, `${call.stderr}\n${said}`).toBe(0);
      const health = await stack.geode(["health"]);
      expect(health.code, health.stdout + health.stderr).toBe(0);
      const down = await timed("cluster: down -v", () => stack.documented(CLUSTER, "docker compose down -v"));
      expect(down.code).toBe(0);
      expect(await stack.leftovers()).toEqual([]);
    },
    10 * MIN,
  );
});

describe("the engine", () => {
  it(
    "ends with the run when it was started for it: no daemon, bridge or iptables rule stays",
    async () => {
      for (const nc of open.splice(0)) await nc.close().catch(() => undefined);
      // Whatever a failed test above left: its stacks go first, while the engine still answers.
      for (const s of stacks.splice(0)) await s.remove();
      if (!engine.owned) {
        // Somebody else's engine: it keeps running.
        expect((await docker("version", "--format", "{{.Server.Version}}")).stdout.trim()).toBe(
          engine.version,
        );
        return;
      }
      expect((await docker("ps", "-a", "-q")).stdout.trim()).toBe("");
      expect((await docker("volume", "ls", "-q")).stdout.trim()).toBe("");
      await pruneUntagged(engine);
      await engine.stop();
      expect(enginePids()).toEqual([]);
      expect(await dockerBridges()).toEqual([]);
      expect(await dockerIptables()).toEqual([]);
    },
    3 * MIN,
  );
});
