/**
 * Services never linger: every drain has a deadline (`GEODE_SHUTDOWN_TIMEOUT_MS`), also when the
 * NATS it drains into is gone, and a service whose `geode up` died exits by itself.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { startNatsServer } from "@geode/cli";
import { freePort } from "@geode/local-server";
import {
  GEODE_BIN,
  processAlive,
  type SpawnedProcess,
  spawnService,
  useTestEnv,
  waitFor,
} from "@geode/testing";
import { afterAll, describe, expect, it } from "vitest";

const env = useTestEnv();
const scratch = mkdtempSync(path.join(tmpdir(), "geode-shutdown-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** Resolves with the exit code, or "still running" once `ms` passed (a bound, not a timing claim). */
function exitWithin(p: SpawnedProcess, ms: number): Promise<number | null | "still running"> {
  return Promise.race([
    p.exited,
    new Promise<"still running">((r) => setTimeout(() => r("still running"), ms)),
  ]);
}

/** The processes whose working folder is `cwd`, with their command lines. */
function processesIn(cwd: string): Array<{ pid: number; cmd: string }> {
  const real = realpathSync(cwd);
  const out: Array<{ pid: number; cmd: string }> = [];
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      if (readlinkSync(`/proc/${d}/cwd`) !== real) continue;
      out.push({ pid: Number(d), cmd: readFileSync(`/proc/${d}/cmdline`, "utf8").replaceAll("\0", " ") });
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return out;
}

describe("services never linger", () => {
  it("a service whose NATS stopped answering exits at its drain deadline on SIGTERM", {
    timeout: 180_000,
  }, async () => {
    const port = await freePort();
    const nats = await startNatsServer({ port, storeDir: path.join(scratch, "nats") });
    const names = ["activity-recorder", "agent-gateway"];
    const services: SpawnedProcess[] = [];
    try {
      const serviceEnv = {
        ...env().env,
        NATS_URL: nats.url,
        GEODE_SHUTDOWN_TIMEOUT_MS: "3000",
        GEODE_GATEWAY_ADDR: "127.0.0.1:0",
        GEODE_RUNS_DIR: path.join(scratch, "runs"),
        LOG_LEVEL: "info",
      };
      // The two seen alive half an hour after their NATS had gone.
      for (const name of names) services.push(spawnService(`services/${name}/src/main.ts`, serviceEnv));
      for (const [i, s] of services.entries())
        await s.waitForOutput(new RegExp(`${names[i]} started`), 90_000);
      // A NATS that is there but does not answer (a hung server, a partition that drops packets):
      // the connection stays open, so the drain waits on it, and the client notices nothing for minutes.
      nats.child.kill("SIGSTOP");
      for (const s of services) s.child.kill("SIGTERM");
      for (const s of services) {
        const code = await exitWithin(s, 60_000);
        expect(code, `${s.child.signalCode} ${s.output().slice(-3000)}`).toBe(1);
        expect(s.output()).toMatch(/did not finish draining within 3000 ms; exiting/);
      }
    } finally {
      for (const s of services) if (s.child.exitCode === null) s.child.kill("SIGKILL");
      nats.child.kill("SIGCONT");
      await nats.stop();
    }
  });

  it("every service exits by itself when geode up and its nats-server are SIGKILLed together", {
    timeout: 300_000,
  }, async () => {
    const cwd = mkdtempSync(path.join(scratch, "up-"));
    const natsPort = await freePort();
    const up = spawn(process.execPath, [GEODE_BIN, "up"], {
      cwd,
      env: {
        ...process.env,
        ...env().env,
        NATS_URL: `nats://127.0.0.1:${natsPort}`,
        // As a newcomer runs it: the embedded PGlite, owned by geode up.
        DATABASE_URL: "",
        GEODE_GATEWAY_ADDR: "127.0.0.1:0",
        GEODE_METRICS_PORT: "0",
        LOG_LEVEL: "warn",
      },
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    let out = "";
    up.stdout?.on("data", (c: Buffer) => {
      out += c.toString("utf8");
    });
    up.stderr?.on("data", (c: Buffer) => {
      out += c.toString("utf8");
    });
    let started: number[] = [];
    try {
      await waitFor(() => out.includes("geode up: ready") || up.exitCode !== null, 240_000, 100);
      expect(out).toContain("geode up: ready");
      const procs = processesIn(cwd);
      const nats = procs.filter((p) => /nats-server|nats-tether/.test(p.cmd));
      const services = procs.filter((p) => p.pid !== up.pid && !nats.includes(p));
      started = services.map((p) => p.pid);
      expect(nats.length).toBeGreaterThanOrEqual(1);
      expect(services.length).toBeGreaterThanOrEqual(5);
      // geode up and the NATS its services use, gone at once (an OOM kill, a closed machine).
      for (const p of [{ pid: up.pid as number }, ...nats]) process.kill(p.pid, "SIGKILL");
      await waitFor(() => started.every((pid) => !processAlive(pid)), 60_000, 200).catch(() => {
        const left = processesIn(cwd).map((p) => `${p.pid} ${p.cmd.slice(0, 120)}`);
        throw new Error(`still running 60 s later:\n${left.join("\n")}`);
      });
    } finally {
      for (const p of processesIn(cwd)) process.kill(p.pid, "SIGKILL");
      if (up.exitCode === null) up.kill("SIGKILL");
    }
  });
});
