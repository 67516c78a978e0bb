import { spawn } from "node:child_process";
import path from "node:path";
import { HealthReplySchema } from "@geode/contracts";
import { processAlive, REPO_ROOT, spawnProgram, useTestEnv, waitFor } from "@geode/testing";
import { describe, expect, it } from "vitest";

// A service started by a supervisor (with an IPC channel, as `geode up` starts them) drains and
// exits when that channel closes; one started any other way keeps serving when its parent goes.

const env = useTestEnv();
const DISPATCHER = path.join(REPO_ROOT, "services/hook-dispatcher/dist/main.js");

async function answersHealth(): Promise<boolean> {
  const { nc, names } = env();
  try {
    const reply = await nc.request(names.health("hook-dispatcher"), "", { timeout: 2_000 });
    return HealthReplySchema.parse(reply.json()).status === "ok";
  } catch {
    return false;
  }
}

describe("a service and the process that started it", () => {
  it("drains and exits 0 by itself when its supervisor's IPC channel closes", async () => {
    const child = spawn(process.execPath, [DISPATCHER], {
      env: { ...process.env, ...env().env, LOG_LEVEL: "info" },
      stdio: ["ignore", "pipe", "pipe", "ipc"],
    });
    let out = "";
    child.stdout?.on("data", (c: Buffer) => {
      out += c.toString("utf8");
    });
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    try {
      await waitFor(() => out.includes("hook-dispatcher started"), 60_000);
      expect(await answersHealth()).toBe(true);
      // What a supervisor's death does to the channel, without killing the test.
      child.disconnect();
      const t0 = Date.now();
      expect(await exited).toBe(0);
      expect(Date.now() - t0).toBeLessThan(10_000);
      expect(out).toMatch(/the process that started it is gone; draining/);
      expect(out).toMatch(/"signal":"supervisor-gone".*hook-dispatcher draining/);
      expect(out).toMatch(/hook-dispatcher stopped/);
    } finally {
      child.kill("SIGKILL");
    }
  }, 90_000);

  it("keeps serving when started without one (directly, or as a container's PID 1) and its parent dies", async () => {
    // A shell starts the service and is then killed: the service's parent is gone, as after SIGKILL.
    const shell = spawnProgram("sh", ["-c", `"${process.execPath}" "${DISPATCHER}" & echo "pid=$!"; wait`], {
      ...env().env,
      LOG_LEVEL: "info",
    });
    let pid = 0;
    try {
      await shell.waitForOutput(/hook-dispatcher started/);
      pid = Number(/pid=(\d+)/.exec(shell.output())?.[1]);
      expect(processAlive(pid)).toBe(true);
      shell.child.kill("SIGKILL");
      await shell.exited;
      await new Promise((r) => setTimeout(r, 3_000));
      expect(processAlive(pid)).toBe(true);
      expect(await answersHealth()).toBe(true);
      process.kill(pid, "SIGTERM");
      await waitFor(() => !processAlive(pid), 15_000, 100);
    } finally {
      if (pid > 0 && processAlive(pid)) process.kill(pid, "SIGKILL");
    }
  }, 90_000);
});
