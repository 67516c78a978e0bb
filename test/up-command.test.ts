import { type ChildProcess, spawn } from "node:child_process";
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  rmSync,
  statSync,
} from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { names as buildNames, HealthReplySchema, SERVICE_NAMES } from "@geode/contracts";
import { freePort } from "@geode/local-server";
import { GEODE_BIN, processAlive, REPO_ROOT, useTestEnv, waitFor } from "@geode/testing";
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

/**
 * Runs the compiled `geode <args>` (the bin users run) as a real child process in `cwd` with `env`
 * added; `detached`: in a process group of its own, as `setsid geode up` in a terminal.
 */
function geode(args: string[], env: Record<string, string>, cwd: string, detached = false): Run {
  const child = spawn(process.execPath, [GEODE_BIN, ...args], {
    cwd,
    // The agent gateway listens on a free port, never on the default one.
    env: { ...process.env, GEODE_GATEWAY_ADDR: "127.0.0.1:0", ...env },
    stdio: ["ignore", "pipe", "pipe"],
    detached,
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

/** The processes whose working folder is `cwd`: everything `geode up` started there, and itself. */
function processesIn(cwd: string): number[] {
  const real = realpathSync(cwd);
  return readdirSync("/proc")
    .filter((d) => /^\d+$/.test(d))
    .filter((pid) => {
      try {
        return readlinkSync(`/proc/${pid}/cwd`) === real;
      } catch {
        return false; // gone meanwhile, or not ours to read
      }
    })
    .map(Number);
}

/** A process's pid and command line, to name what is left. */
function commandLine(pid: number): string {
  try {
    return `${pid} ${readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ").trim()}`;
  } catch {
    return String(pid);
  }
}

const env = useTestEnv();

describe("geode up", () => {
  it("starts every service, restarts one that is SIGKILLed while the others serve, and stops all on SIGINT", async () => {
    expect(SERVICES.length).toBeGreaterThan(0);
    // The notary's signing key is made (mode 0600) where GEODE_AUDIT_KEY_FILE says, when missing.
    const keyFile = path.join(mkdtempSync(path.join(tmpdir(), "geode-up-key-")), "keys", "audit.key");
    const run = geode(["up"], { ...env().env, LOG_LEVEL: "info", GEODE_AUDIT_KEY_FILE: keyFile }, REPO_ROOT);
    const { nc, names } = env();
    const health = async (s: string) =>
      HealthReplySchema.parse((await nc.request(names.health(s), "", { timeout: 5_000 })).json());
    try {
      await run.waitFor(/geode up: ready/);
      if (SERVICES.includes("notary")) {
        expect(run.output()).toContain(`geode up: made the audit signing key ${keyFile}; its verifier key: `);
        expect(statSync(keyFile).mode & 0o777).toBe(0o600);
      }
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

  it("starts its own nats-server when none answers on a loopback NATS_URL, and stops it on exit; a console on it then says NATS is gone", async () => {
    const cwd = mkdtempSync(path.join(tmpdir(), "geode-up-"));
    const port = await freePort();
    const ns = env().ns;
    const service = SERVICES.includes("hook-dispatcher") ? "hook-dispatcher" : (SERVICES[0] as string);
    let consoleRun: Run | undefined;
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
      // A console on that NATS: once the plane (and its NATS) stops, every API route says so.
      const token = "console-token-nats-goes";
      consoleRun = geode(
        ["console", "--port", "0"],
        { NATS_URL: `nats://127.0.0.1:${port}`, GEODE_NAMESPACE: ns, GEODE_CONSOLE_TOKEN: token },
        cwd,
      );
      const [, consoleUrl] = await consoleRun.waitFor(/console on (http:\/\/127\.0\.0\.1:\d+)/, 60_000);
      const me = () =>
        fetch(`${consoleUrl}/api/me`, { headers: { authorization: `Bearer ${token}` } }).then(async (r) => ({
          status: r.status,
          body: (await r.json()) as unknown,
        }));
      expect((await me()).status).toBe(200);
      run.child.kill("SIGTERM");
      expect(await run.exit).toBe(0);
      await expect(connect({ servers: `nats://127.0.0.1:${port}`, reconnect: false })).rejects.toThrow();
      await waitFor(async () => (await me()).status === 503, 30_000);
      expect(await me()).toEqual({
        status: 503,
        body: {
          error: {
            code: "unavailable",
            message: `NATS at nats://127.0.0.1:${port} is not reachable: start the plane with \`geode up\``,
          },
        },
      });
    } finally {
      consoleRun?.child.kill("SIGKILL");
      run.child.kill("SIGKILL");
      rmSync(cwd, { recursive: true, force: true });
    }
  }, 120_000);

  it("leaves nothing running when it is SIGKILLed, so the next geode up starts on the same ports", async () => {
    // Its own nats-server and embedded PGlite, in a folder of its own: everything it starts runs there.
    const cwd = mkdtempSync(path.join(tmpdir(), "geode-up-kill-"));
    const [natsPort, gatewayPort] = [await freePort(), await freePort()];
    const upEnv = {
      NATS_URL: `nats://127.0.0.1:${natsPort}`,
      GEODE_NAMESPACE: env().ns,
      GEODE_GATEWAY_ADDR: `127.0.0.1:${gatewayPort}`,
      GEODE_METRICS_PORT: "0",
      DATABASE_URL: "",
      LOG_LEVEL: "info",
      // Orphaned services drain this long before they exit anyway: well inside the bound below,
      // also on a loaded machine.
      GEODE_SHUTDOWN_TIMEOUT_MS: "4000",
    };
    const first = geode(["up"], upEnv, cwd, true);
    let second: Run | undefined;
    try {
      await first.waitFor(/geode up: ready/);
      expect(first.output()).toContain("(embedded)");
      expect(first.output()).toMatch(/database embedded PGlite/);
      const started = processesIn(cwd);
      // geode up, its services and the nats-server (with its tether).
      expect(started.length).toBeGreaterThanOrEqual(SERVICES.length + 2);

      // The whole process group at once, as `kill -KILL -- -<pgid>` (or an OOM kill of geode up alone).
      process.kill(-(first.child.pid as number), "SIGKILL");
      const t0 = Date.now();
      await waitFor(() => processesIn(cwd).length === 0, 15_000, 100).catch(() => {
        throw new Error(`still running after 15 s: ${processesIn(cwd).map(commandLine).join(", ")}`);
      });
      expect(Date.now() - t0).toBeLessThan(15_000);

      second = geode(["up"], upEnv, cwd, true);
      await second.waitFor(/geode up: ready/);
      expect(second.output()).not.toMatch(/EADDRINUSE|already open/);
      expect(await (await fetch(`http://127.0.0.1:${gatewayPort}/healthz`)).json()).toEqual({ status: "ok" });
      second.child.kill("SIGINT");
      expect(await second.exit).toBe(0);
      await waitFor(() => processesIn(cwd).length === 0, 10_000, 100);
    } finally {
      for (const run of [first, second])
        if (run?.child.pid !== undefined) {
          try {
            process.kill(-run.child.pid, "SIGKILL");
          } catch {
            // already gone
          }
        }
      for (const pid of processesIn(cwd)) process.kill(pid, "SIGKILL");
      rmSync(cwd, { recursive: true, force: true });
    }
  }, 240_000);

  it("geode audit, agents ls and console find the running plane from any folder, and say what is down when it is not", async () => {
    const planeDir = mkdtempSync(path.join(tmpdir(), "geode-up-plane-"));
    const handlerDir = mkdtempSync(path.join(tmpdir(), "geode-my-guard-"));
    // The user's runtime folder, where geode up records itself (its own, so no other run sees it).
    const runtimeDir = mkdtempSync(path.join(tmpdir(), "geode-runtime-"));
    const ns = env().ns;
    const token = "console-token-from-elsewhere";
    const common = {
      NATS_URL: env().natsUrl,
      GEODE_NAMESPACE: ns,
      LOG_LEVEL: "warn",
      DATABASE_URL: "",
      XDG_RUNTIME_DIR: runtimeDir,
      GEODE_CONSOLE_TOKEN: token,
    };
    const up = geode(["up", "--only", "activity-recorder"], common, planeDir);
    const consoles: Run[] = [];
    /** `geode console --port 0` in the handler's folder; resolves with the address it serves. */
    const startConsoleIn = async (extra: Record<string, string>, pattern: RegExp) => {
      const c = geode(["console", "--port", "0"], { ...common, ...extra }, handlerDir);
      consoles.push(c);
      const [, url] = await c.waitFor(pattern, 60_000);
      return { run: c, url: url as string };
    };
    const api = async (url: string, p: string) => {
      const res = await fetch(`${url}${p}`, { headers: { authorization: `Bearer ${token}` } });
      return {
        status: res.status,
        body: (await res.json()) as { error?: { code: string; message: string } },
      };
    };
    try {
      await up.waitFor(/database embedded PGlite \(\.geode\/pgdata\) served at postgres:\/\/\S+/);
      await up.waitFor(/geode up: ready/);

      // From another folder, with nothing but the namespace and NATS: the running plane's data.
      const audit = geode(["audit"], common, handlerDir);
      expect(await audit.exit, audit.output()).toBe(0);
      expect(audit.output()).toContain(`no extension invocations recorded in namespace ${ns}`);
      const added = geode(["agents", "add", "elsewhere"], common, handlerDir);
      expect(await added.exit, added.output()).toBe(0);
      const ls = geode(["agents", "ls", "--json"], common, handlerDir);
      expect(await ls.exit, ls.output()).toBe(0);
      expect(ls.output()).not.toMatch(/no activity shown|no running plane/);
      expect(ls.output()).toMatch(/"name":"elsewhere"/);
      const live = await startConsoleIn({}, /console on (http:\/\/127\.0\.0\.1:\d+)/);
      expect((await api(live.url, "/api/sessions")).status).toBe(200);
      expect(live.run.output()).not.toMatch(/no session views/);
      live.run.child.kill("SIGINT");
      expect(await live.run.exit).toBe(0);
      expect(existsSync(path.join(handlerDir, ".geode"))).toBe(false);

      // The plane stopped: each says what is down and how to start it, in one line.
      up.child.kill("SIGINT");
      expect(await up.exit).toBe(0);
      const noPlane = new RegExp(
        `no running plane for namespace ${ns} on NATS nats://127\\.0\\.0\\.1:\\d+: start it with \`geode up\` \\(in any folder\\)`,
      );
      const lost = geode(["audit"], common, handlerDir);
      expect(await lost.exit).toBe(1);
      expect(lost.output().trimEnd().split("\n"), lost.output()).toHaveLength(1);
      expect(lost.output()).toMatch(noPlane);
      const lsDown = geode(["agents", "ls"], common, handlerDir);
      expect(await lsDown.exit).toBe(0);
      expect(lsDown.output()).toMatch(noPlane);
      const noViews = await startConsoleIn({}, /console on (http:\/\/127\.0\.0\.1:\d+)/);
      const sessions = await api(noViews.url, "/api/sessions");
      expect(sessions.status).toBe(503);
      expect(sessions.body.error?.message).toMatch(noPlane);
      noViews.run.child.kill("SIGINT");
      expect(await noViews.run.exit).toBe(0);

      // No NATS at all: agents ls names it, the console serves only that (page and API, 503).
      const deadNats = `nats://127.0.0.1:${await freePort()}`;
      const lsNoNats = geode(["agents", "ls"], { ...common, NATS_URL: deadNats }, handlerDir);
      expect(await lsNoNats.exit).toBe(1);
      expect(lsNoNats.output()).toContain(`cannot connect to NATS at ${deadNats}`);
      expect(lsNoNats.output()).toContain("`geode up`");
      const down = await startConsoleIn(
        { NATS_URL: deadNats },
        /serving only that on (http:\/\/127\.0\.0\.1:\d+) until it answers/,
      );
      const natsDown = `NATS at ${deadNats} is not reachable: start the plane with \`geode up\``;
      for (const p of ["/api/sessions", "/api/approvals", "/api/me"])
        expect(await api(down.url, p)).toEqual({
          status: 503,
          body: { error: { code: "unavailable", message: natsDown } },
        });
      const page = await fetch(`${down.url}/`);
      expect(page.status).toBe(503);
      expect(await page.text()).toContain(natsDown);
      down.run.child.kill("SIGINT");
      expect(await down.run.exit).toBe(0);
    } finally {
      for (const c of consoles) c.child.kill("SIGKILL");
      up.child.kill("SIGINT");
      await up.exit;
      rmSync(planeDir, { recursive: true, force: true });
      rmSync(handlerDir, { recursive: true, force: true });
      rmSync(runtimeDir, { recursive: true, force: true });
    }
  }, 180_000);

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
