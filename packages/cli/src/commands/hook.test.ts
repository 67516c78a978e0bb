import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { useTestEnv } from "@geode/testing";
import { afterAll, describe, expect, it } from "vitest";
import { runCliCaptured } from "../capture-io.js";

const env = useTestEnv();
const dir = mkdtempSync(path.join(tmpdir(), "geode-hook-invoke-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const geode = (args: string[]) => runCliCaptured(args, env().env);

describe("geode hook invoke and tool call: bad input", () => {
  it("refuses an unknown hook, a missing or malformed payload, with the usage and exit 2", async () => {
    const unknown = await geode(["hook", "invoke", "PreToolUsed", "--payload", "{}"]);
    expect(unknown.code).toBe(2);
    expect(unknown.err).toMatch(/unknown hook PreToolUsed; one of: UserPromptSubmit, /);
    expect(unknown.err).toMatch(/Usage: geode hook invoke/);

    const missing = await geode(["hook", "invoke", "PreToolUse"]);
    expect(missing).toMatchObject({ code: 2 });
    expect(missing.err).toMatch(/--payload is required/);

    const broken = await geode(["hook", "invoke", "PreToolUse", "--payload", "{tool_name:"]);
    expect(broken.code).toBe(2);
    expect(broken.err).toMatch(/--payload is not valid JSON/);

    const array = await geode(["tool", "call", "echo", "--args", "[1]"]);
    expect(array.code).toBe(2);
    expect(array.err).toMatch(/--args must be a JSON object/);

    const noFile = await geode(["tool", "call", "echo", "--args", `@${path.join(dir, "absent.json")}`]);
    expect(noFile.code).toBe(2);
    expect(noFile.err).toMatch(/--args @.*absent\.json: ENOENT/);
  });

  it("reads a payload from @file and says plainly when no dispatcher answers (exit 1)", async () => {
    const file = path.join(dir, "payload.json");
    writeFileSync(file, JSON.stringify({ tool_name: "shell", arguments: { command: "ls" } }));
    const r = await geode(["hook", "invoke", "PreToolUse", "--payload", `@${file}`, "--timeout", "500"]);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/^geode hook invoke: .*(no hook-dispatcher|unavailable|no responders)/i);
  });
});
