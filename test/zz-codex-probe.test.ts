import { readdirSync, readFileSync, rmSync, mkdirSync, writeFileSync } from "node:fs";
import { it } from "vitest";
import { codexScratch, providerConfig, runCodex, startResponsesStandIn, writeCodexConfig } from "./codex-support.js";

it("probe", { timeout: 200_000 }, async () => {
  rmSync("/tmp/cxprobe/in", { recursive: true, force: true });
  mkdirSync("/tmp/cxprobe/in", { recursive: true });
  const events = ["SessionStart","UserPromptSubmit","PreToolUse","PermissionRequest","PostToolUse","PreCompact","PostCompact","SubagentStart","SubagentStop","Stop","SessionEnd","Interrupt"];
  let hooks = "";
  for (const e of events)
    hooks += `\n[[hooks.${e}]]\nmatcher = "*"\n[[hooks.${e}.hooks]]\ntype = "command"\ncommand = "node /tmp/cxprobe/hook.mjs"\ntimeout = 10\n`;
  const dirs = codexScratch();
  const api = await startResponsesStandIn(JSON.parse(process.env.SCRIPT ?? "[]"));
  let base = providerConfig(api.url);
  if (process.env.CFG) base = base.replace('approval_policy = "never"\n', "").replace('sandbox_mode = "danger-full-access"\n', process.env.CFG + "\n");
  writeCodexConfig(dirs.home, base + hooks);
  const run = await runCodex({ prompt: "do it", home: dirs.home, cwd: dirs.work, args: ["--dangerously-bypass-hook-trust"] });
  const files = readdirSync("/tmp/cxprobe/in").sort();
  const bodies = files.map((f) => JSON.parse(readFileSync(`/tmp/cxprobe/in/${f}`, "utf8")));
  writeFileSync("/tmp/cxprobe/out.json", JSON.stringify({ bodies, code: run.code, stderr: run.stderr.slice(-3000), events: run.events, requests: api.requests.map((r) => r.body) }, null, 1));
  await api.close(); dirs.cleanup();
});
