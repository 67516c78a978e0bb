import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { ALLOWED_ACTIONS, HOOK_NAMES, publicHookSchema } from "@geode/contracts";
import { afterAll, describe, expect, it } from "vitest";
import { runCliCaptured } from "./capture-io.js";
import { HOOKS_DOC_PATH, renderHooksDoc } from "./commands/docs.js";

const dir = mkdtempSync(path.join(tmpdir(), "geode-docs-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const run = (argv: string[]) => runCliCaptured(argv, {});

describe("docs/hooks.md", () => {
  it("is up to date with the runtime schemas (run `pnpm docs:hooks` to regenerate)", () => {
    expect(readFileSync(HOOKS_DOC_PATH, "utf8")).toBe(renderHooksDoc());
  });

  it("documents every hook from its runtime schema: fields, types, actions, v1 and v2 $ids", () => {
    const doc = renderHooksDoc();
    for (const hook of HOOK_NAMES) {
      const start = doc.indexOf(`### ${hook}\n`);
      expect(start, hook).toBeGreaterThan(0);
      const end = doc.indexOf("\n### ", start + 1);
      const section = doc.slice(start, end === -1 ? undefined : end);
      expect(section).toContain(
        `- allowed actions: ${ALLOWED_ACTIONS[hook].map((a) => `\`${a}\``).join(", ")}`,
      );
      for (const version of ["v1", "v2"] as const) {
        expect(section).toContain(`\`${publicHookSchema(hook, { version })["$id"]}\``);
      }
      const payload = (
        publicHookSchema(hook)["properties"] as { payload: { properties: object; required: string[] } }
      ).payload;
      for (const field of Object.keys(payload.properties)) {
        const required = payload.required.includes(field) ? "yes" : "no";
        expect(section).toMatch(new RegExp(`\\| \`${field}\` \\| [^|]+ \\| ${required} \\|`));
      }
    }
    expect(doc).toContain("| `rounds` | integer | yes |");
    expect(doc).toContain("| `arguments` | object (free) | yes |");
    expect(doc).toContain("| `evidence_refs` | array of object (closed), at most 32 | yes |");
    expect(doc).toContain("| `generation` | integer | no |");
  });

  it("lists the decision fields with their cuts and the limits", () => {
    const doc = renderHooksDoc();
    expect(doc).toContain("| `reason` | string | no | cut to 1,024 characters |");
    expect(doc).toContain("| `instruction` | string | no | cut to 4,096 characters |");
    expect(doc).toContain("`PreVerify strengthen requires additional_misses`");
    expect(doc).toContain("at most 32 KiB of compact UTF-8 JSON");
    expect(doc).toContain("| `step_id` | string | yes | no |");
  });
});

describe("geode docs hooks", () => {
  it("--write writes the file and --check passes; a stale file fails --check", async () => {
    const file = path.join(dir, "hooks.md");
    expect((await run(["docs", "hooks", "--check", "--out", file])).code).toBe(1);
    expect((await run(["docs", "hooks", "--write", "--out", file])).code).toBe(0);
    expect(readFileSync(file, "utf8")).toBe(renderHooksDoc());
    expect((await run(["docs", "hooks", "--check", "--out", file])).code).toBe(0);
    writeFileSync(file, `${renderHooksDoc()}\nhand edit\n`);
    const stale = await run(["docs", "hooks", "--check", "--out", file]);
    expect(stale.code).toBe(1);
    expect(stale.err).toContain("stale");
  });

  it("prints the document without flags and refuses --write with --check", async () => {
    const printed = await run(["docs", "hooks"]);
    expect(printed.code).toBe(0);
    expect(printed.out).toBe(renderHooksDoc());
    expect((await run(["docs", "hooks", "--write", "--check"])).code).toBe(2);
  });
});
