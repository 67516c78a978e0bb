import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { freePort } from "@geode/cli";
import { names as buildNames, HealthReplySchema, SERVICE_NAMES } from "@geode/contracts";
import { GEODE_BIN, processAlive, REPO_ROOT, useTestEnv } from "@geode/testing";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { describe, expect, it } from "vitest";

/** Every service `geode up` should start: the ones with a main.ts. */
const SERVICES = readdirSync(path.join(REPO_ROOT, "services")).filter((s) =>
  existsSync(path.join(REPO_ROOT, "services", s, "src/main.ts")),
);

interface Run {
  child: ChildProcess;
  output(): string;
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  exit: Promise<number | null>;
}

/** Runs the compiled `geode <args>` (the bin users run) as a real child process in `cwd` with `env` added. */
function geode(args: string[], env: Record<string, string>, cwd: string): Run {
  const child = spawn(process.execPath, [GEODE_BIN, ...args], {
    cwd,
    // The agent gateway listens on a free port, never on the default one.
    env: { ...process.env, GEODE_GATEWAY_ADDR: "127.0.0.1:0", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  const waiters = new Set<() => void>();
  const onData = (c: Buffer) => {
    out += c.toString("utf8");
    for (const w of waiters) w();
  };
  child.stdout?.on("data", onData);
  child.stderr?.on("data", onData);
  const exit = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return {
    child,
    output: () => out,
    exit,
    waitFor(pattern, timeoutMs = 150_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const m = out.match(pattern);
          if (m) {
            waiters.delete(check);
            clearTimeout(timer);
            resolve(m);
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`no ${pattern} in output:\n${out.slice(-4000)}`));
        }, timeoutMs);
        waiters.add(check);
        void exit.then((code) => {
          if (!waiters.has(check)) return;
          waiters.delete(check);
          clearTimeout(timer);
          reject(new Error(`geode exited (${code}) before ${pattern}:\n${out.slice(-4000)}`));
        });
        check();
      });
    },
  };
}

/** The pids of the ready table: `<service> ok <version> <pid>` rows. */
function pidsOf(output: string, services: string[]): Map<string, number> {
  const pids = new Map<string, number>();
  for (const s of services) {
    const m = output.match(new RegExp(`^${s}\\s+ok\\s+\\S+\\s+(\\d+)\\s`, "m"));
    if (m?.[1]) pids.set(s, Number(m[1]));
  }
  return pids;
}

const env = useTestEnv();

describe("geode up", () => {
  it("starts every service, restarts one that is SIGKILLed while the others serve, and stops all on SIGINT", async () => {
    expect(SERVICES.length).toBeGreaterThan(0);
    const run = geode(["up"], { ...env().env, LOG_LEVEL: "info" }, REPO_ROOT);
    const { nc, names } = env();
    const health = async (s: string) =>
      HealthReplySchema.parse((await nc.request(names.health(s), "", { timeout: 5_000 })).json());
    try {
      await run.waitFor(/geode up: ready/);
      // The agent gateway's HTTP front door answers too.
      const [, url] = await run.waitFor(/agent-gateway listening on (http:\/\/[0-9.:]+)/);
      expect(await (await fetch(`${url}/healthz`)).json()).toEqual({ status: "ok" });
      const pids = pidsOf(run.output(), SERVICES);
      expect([...pids.keys()].sort()).toEqual([...SERVICES].sort());
      for (const s of SERVICES) expect(await health(s)).toMatchObject({ service: s, status: "ok" });

      // A crash is a restart, not a reason to stop the others.
      const victim = SERVICES.includes("tool-executor") ? "tool-executor" : (SERVICES[0] as string);
      process.kill(pids.get(victim) as number, "SIGKILL");
      await run.waitFor(
        new RegExp(
          `geode up: ${victim} exited unexpectedly \\(signal SIGKILL after [0-9.]+ s\\); restart 1 in 0\\.5 s`,
        ),
      );
      for (const s of SERVICES.filter((x) => x !== victim))
        expect(await health(s)).toMatchObject({ service: s, status: "ok" });
      const [, newPid] = await run.waitFor(new RegExp(`geode up: ${victim} started again \\(pid (\\d+)\\)`));
      await run.waitFor(new RegExp(`geode up: ${victim} answers health again`));
      expect(Number(newPid)).not.toBe(pids.get(victim));
      expect(await health(victim)).toMatchObject({ service: victim, status: "ok" });
      expect(await health("geode-up")).toMatchObject({ service: "geode-up", status: "ok" });
      expect(run.output()).not.toMatch(/stopping the others/);
      pids.set(victim, Number(newPid));

      run.child.kill("SIGINT");
      expect(await run.exit).toBe(0);
      expect(run.output()).toMatch(/geode up: stopped/);
      for (const [s, pid] of pids) expect(processAlive(pid), `${s} (pid ${pid}) still running`).toBe(false);
      // One after the other, the reverse of start, the recorder last (it records the others' drain).
      const stoppedAt = (s: string) => run.output().search(new RegExp(`\\| .*INFO +${s} stopped`));
      const started = [...SERVICE_NAMES, ...SERVICES].filter(
        (s, i, all) => SERVICES.includes(s) && all.indexOf(s) === i,
      );
      const expected = [...started.filter((s) => s !== "activity-recorder").reverse(), "activity-recorder"];
      const order = [...SERVICES].sort((a, b) => stoppedAt(a) - stoppedAt(b));
      expect(SERVICES.every((s) => stoppedAt(s) >= 0)).toBe(true);
      expect(order).toEqual(expected);
    } finally {
      run.child.kill("SIGKILL");
    }
  }, 240_000);

  it("starts its own nats-server when none answers on a loopback NATS_URL, and stops it on exit", async () => {
    const cwd = mkdtempSync(path.join(tmpdir(), "geode-up-"));
    const port = await freePort();
    const ns = env().ns;
    const service = SERVICES.includes("hook-dispatcher") ? "hook-dispatcher" : (SERVICES[0] as string);
    const run = geode(
      ["up", "--only", service],
      { NATS_URL: `nats://127.0.0.1:${port}`, GEODE_NAMESPACE: ns, LOG_LEVEL: "warn" },
      cwd,
    );
    try {
      await run.waitFor(/geode up: ready/);
      expect(run.output()).toContain("(embedded)");
      const nc = await connect({ servers: `nats://127.0.0.1:${port}`, reconnect: false });
      try {
        const reply = await nc.request(buildNames(ns).health(service), "", { timeout: 5_000 });
        expect(reply.json()).toMatchObject({ service, status: "ok" });
        const info = await (await jetstreamManager(nc)).getAccountInfo();
        expect(info.streams).toBeGreaterThanOrEqual(0); // JetStream is on
      } finally {
        await nc.close();
      }
      expect(existsSync(path.join(cwd, ".geode/nats/jetstream"))).toBe(true);
      run.child.kill("SIGTERM");
      expect(await run.exit).toBe(0);
      await expect(connect({ servers: `nats://127.0.0.1:${port}`, reconnect: false })).rejects.toThrow();
    } finally {
      run.child.kill("SIGKILL");
      rmSync(cwd, { recursive: true, force: true });
    }
  }, 120_000);

  it("says how to get NATS and exits 1 when NATS_URL is unreachable and not local", async () => {
    const run = geode(["up"], { NATS_URL: "nats://192.0.2.1:4222", GEODE_NAMESPACE: env().ns }, REPO_ROOT);
    expect(await run.exit).toBe(1);
    expect(run.output()).toMatch(/NATS is not reachable at nats:\/\/192\.0\.2\.1:4222/);
  });

  it("names the service that fails at start, shows its output, and exits 1", async () => {
    const run = geode(
      ["up", "--only", "activity-recorder"],
      { ...env().env, GEODE_RECORDER_BATCH_SIZE: "lots" },
      REPO_ROOT,
    );
    expect(await run.exit).toBe(1);
    expect(run.output()).toMatch(/geode up: activity-recorder exited \(2\) during start-up/);
    expect(run.output()).toMatch(/GEODE_RECORDER_BATCH_SIZE must be a positive integer/);
    expect(run.output()).not.toMatch(/geode up: ready/);
  }, 60_000);

  it("refuses a bad configuration before starting anything", async () => {
    // A common setting is checked before anything starts; a service's own (GEODE_RECORDER_BATCH_SIZE
    // above) when that service starts.
    const run = geode(["up"], { ...env().env, GEODE_APPROVAL_TIMEOUT_MS: "soon" }, REPO_ROOT);
    expect(await run.exit).toBe(2);
    expect(run.output()).toMatch(/GEODE_APPROVAL_TIMEOUT_MS must be a non-negative integer/);
  });
});
