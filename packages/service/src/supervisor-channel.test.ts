import { fork } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { expect, it } from "vitest";

const compiled = fileURLToPath(new URL("../dist/supervisor-channel.js", import.meta.url));

it("an orphan whose main thread stays busy is killed all the same", async () => {
  // The child watches its channel, says so, and keeps its main thread busy for 20 s once the
  // supervisor is gone: only the watchdog thread can end it before that.
  const dir = mkdtempSync(path.join(tmpdir(), "geode-orphan-"));
  const script = path.join(dir, "orphan.mjs");
  writeFileSync(
    script,
    `const { supervisorGone } = await import(${JSON.stringify(pathToFileURL(compiled).href)});
const gone = supervisorGone(200);
// What keeps a service alive (its NATS connection), not the channel.
setInterval(() => undefined, 1_000);
process.send("watching");
await gone;
const until = Date.now() + 20_000;
while (Date.now() < until) {}
console.log("still here");
`,
  );
  try {
    const child = fork(script, [], { stdio: ["ignore", "pipe", "inherit", "ipc"] });
    let out = "";
    child.stdout?.on("data", (b: Buffer) => {
      out += b.toString();
    });
    const exited = new Promise<NodeJS.Signals | null>((resolve) =>
      child.on("exit", (_code, s) => resolve(s)),
    );
    await new Promise((resolve) => child.once("message", resolve));
    child.disconnect();
    expect(await exited).toBe("SIGKILL");
    expect(out).not.toContain("still here");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 30_000);
