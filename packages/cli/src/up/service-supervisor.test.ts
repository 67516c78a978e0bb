import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { type RestartNotice, restartDelay, ServiceSupervisor } from "./service-supervisor.js";

const dir = mkdtempSync(path.join(tmpdir(), "geode-supervisor-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function script(name: string, body: string): { name: string; nodeArgs: string[] } {
  const entry = path.join(dir, `${name}.mjs`);
  writeFileSync(entry, body);
  return { name, nodeArgs: [entry] };
}

async function until(check: () => boolean, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("restartDelay", () => {
  it("doubles from the base and stops at the cap", () => {
    const policy = { baseDelayMs: 500, maxDelayMs: 30_000, stableAfterMs: 30_000, crashLoopAfter: 5 };
    expect([1, 2, 3, 4, 5, 6, 7, 8].map((a) => restartDelay(a, policy))).toEqual([
      500, 1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000,
    ]);
  });
});

describe("ServiceSupervisor", () => {
  it("reports an exit before supervise() without restarting it", async () => {
    const sup = new ServiceSupervisor(script("early", "process.exit(2);"), {
      env: process.env,
      onLine: () => undefined,
      onRestart: () => expect.fail("restarted before supervise()"),
    });
    expect(await sup.startupExit).toBe(2);
    await new Promise((r) => setTimeout(r, 200));
    expect(sup.restartCount).toBe(0);
  });

  it("restarts a crashing service with growing delays, reports it crash-looping, and stop() ends it", async () => {
    const notices: RestartNotice[] = [];
    const sup = new ServiceSupervisor(script("crashing", "setTimeout(() => process.exit(3), 50);"), {
      env: process.env,
      onLine: () => undefined,
      onRestart: (n) => notices.push(n),
      policy: { baseDelayMs: 20, maxDelayMs: 80, stableAfterMs: 60_000, crashLoopAfter: 3 },
    });
    sup.supervise();
    await until(() => notices.length >= 4);
    expect(notices.slice(0, 4).map((n) => [n.exit, n.attempt, n.delayMs, n.crashLooping])).toEqual([
      [3, 1, 20, false],
      [3, 2, 40, false],
      [3, 3, 80, true],
      [3, 4, 80, true],
    ]);
    expect(sup.state).toBe("crash-looping");
    await sup.stop("SIGTERM", 5_000);
    const seen = notices.length;
    await new Promise((r) => setTimeout(r, 300));
    expect(notices.length).toBe(seen);
    expect(sup.state).toBe("stopped");
  });

  it("starts a SIGKILLed service again as a new process, then stops it on request", async () => {
    const notices: RestartNotice[] = [];
    const lines: string[] = [];
    const sup = new ServiceSupervisor(
      script("steady", "console.log('up ' + process.pid); setInterval(() => undefined, 1000);"),
      {
        env: process.env,
        onLine: (_service, line) => lines.push(line),
        onRestart: (n) => notices.push(n),
        policy: { baseDelayMs: 50 },
      },
    );
    sup.supervise();
    await until(() => lines.length === 1);
    const first = sup.child.pid;
    process.kill(first as number, "SIGKILL");
    await until(() => lines.length === 2);
    expect(notices).toMatchObject([{ service: "steady", exit: "SIGKILL", attempt: 1, delayMs: 50 }]);
    expect(sup.child.pid).not.toBe(first);
    expect(sup.restartCount).toBe(1);
    expect(sup.state).toBe("running");
    expect(await sup.stop("SIGTERM", 5_000)).toBe("SIGTERM");
    expect(notices).toHaveLength(1);
  });
});
