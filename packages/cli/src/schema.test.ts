import { spawnSync } from "node:child_process";
import path from "node:path";
import { HOOK_NAMES } from "@geode/contracts";
import Ajv2020 from "ajv/dist/2020.js";
import { describe, expect, it } from "vitest";
import { runCliCaptured } from "./capture-io.js";

const ROOT = path.resolve(import.meta.dirname, "../../..");

const run = (argv: string[]) => runCliCaptured(argv, {});

function expectValidSchemas(all: Record<string, Record<string, unknown>>, version: "v1" | "v2") {
  expect(Object.keys(all)).toEqual([...HOOK_NAMES]);
  const ajv = new Ajv2020({ strict: true, allErrors: true });
  for (const [hook, schema] of Object.entries(all)) {
    expect(ajv.validateSchema(schema), `${hook} ${JSON.stringify(ajv.errors)}`).toBe(true);
    expect(schema["$schema"]).toBe("https://json-schema.org/draft/2020-12/schema");
    expect(schema["$id"]).toBe(`https://geode.dev/schemas/hooks/${version}/${hook}.json`);
    expect(schema["title"]).toBe(hook);
  }
}

describe("geode schema", () => {
  it("prints all 13 hook schemas, each a valid Draft 2020-12 schema", async () => {
    const { code, out } = await run(["schema", "--all"]);
    expect(code).toBe(0);
    expectValidSchemas(JSON.parse(out), "v2");
  });

  it("prints the v1 schemas with --version v1 (no step_id in the correlation)", async () => {
    const all = await run(["schema", "--all", "--version", "v1"]);
    expect(all.code).toBe(0);
    expectValidSchemas(JSON.parse(all.out), "v1");
    const one = await run(["schema", "PreToolUse", "--version", "v1"]);
    expect(one.code).toBe(0);
    const schema = JSON.parse(one.out) as {
      $id: string;
      properties: { correlation: { properties: Record<string, unknown> } };
    };
    expect(schema.$id).toBe("https://geode.dev/schemas/hooks/v1/PreToolUse.json");
    expect(Object.keys(schema.properties.correlation.properties)).not.toContain("step_id");
    expect(Object.keys(schema.properties.correlation.properties)).toHaveLength(8);
  });

  it("prints one hook's schema by name", async () => {
    const { code, out } = await run(["schema", "PostVerify"]);
    expect(code).toBe(0);
    const schema = JSON.parse(out) as {
      title: string;
      properties: { decision: { properties: { action: { enum: string[] } } } };
    };
    expect(schema.title).toBe("PostVerify");
    expect(schema.properties.decision.properties.action.enum).toEqual(["accept", "revise", "escalate"]);
  });

  it("exits 2 for an unknown hook, a wildcard, an unknown version or no name", async () => {
    const unknown = await run(["schema", "PreToolUze"]);
    expect(unknown.code).toBe(2);
    expect(unknown.out).toBe("");
    expect(unknown.err).toContain("unknown hook: PreToolUze");
    expect((await run(["schema", "*"])).code).toBe(2);
    expect((await run(["schema", "Stop", "--version", "v3"])).code).toBe(2);
    expect((await run(["schema"])).code).toBe(2);
    expect((await run(["schema", "Stop", "--all"])).code).toBe(2);
  });

  it("works as `pnpm geode schema --all` and exits 2 on an unknown hook", () => {
    const all = spawnSync("pnpm", ["-s", "geode", "schema", "--all"], { cwd: ROOT, encoding: "utf8" });
    expect(all.status, all.stderr).toBe(0);
    expectValidSchemas(JSON.parse(all.stdout), "v2");
    const bad = spawnSync("pnpm", ["-s", "geode", "schema", "NoSuchHook"], { cwd: ROOT, encoding: "utf8" });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain("unknown hook: NoSuchHook");
  }, 120_000); // two `pnpm geode` starts: each can take 20 s on a loaded two-core machine
});
