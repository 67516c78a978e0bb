import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { REPO_ROOT } from "@geode/testing";
import { afterAll, describe, expect, it } from "vitest";

// What a newcomer copies from the README and the guides: the install line that works on any
// registry, and handler snippets in plain JavaScript that node runs without TypeScript.

const read = (file: string) => readFileSync(path.join(REPO_ROOT, file), "utf8");

/** The guides people copy handler code from: the README, docs/, and the READMEs of the packages a handler, tool, runtime or middleware author imports. */
const GUIDES = [
  "README.md",
  ...readdirSync(path.join(REPO_ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`),
  "packages/sdk/README.md",
  "packages/runtime/README.md",
  "packages/middleware/README.md",
];

interface Snippet {
  file: string;
  lang: string;
  code: string;
}

/** Every fenced block of `file` that imports from an @geode package (named, or in a JSDoc type). */
function geodeSnippets(file: string): Snippet[] {
  return [...read(file).matchAll(/```(\w*)\n([\s\S]*?)```/g)]
    .map((m) => ({ file, lang: m[1] ?? "", code: m[2] ?? "" }))
    .filter((s) => /from "@geode\/|import\("@geode\//.test(s.code));
}

/** `import { a, b as c } from "pkg"` → [pkg, [a, b]]. */
function namedImports(code: string): Array<[string, string[]]> {
  return [...code.matchAll(/import\s*\{([^}]*)\}\s*from\s*"([^"]+)"/g)].map((m) => [
    m[2] ?? "",
    (m[1] ?? "")
      .split(",")
      .map((n) => n.trim().split(/\s+as\s+/)[0] ?? "")
      .filter((n) => n !== ""),
  ]);
}

const work = mkdtempSync(path.join(tmpdir(), "geode-snippets-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe("the docs' handler snippets", () => {
  const snippets = GUIDES.flatMap(geodeSnippets);

  it("are there to check: the README's handler, tool and evaluator, the Claude Code guard, the middleware", () => {
    expect(snippets.filter((s) => s.file === "README.md").length).toBeGreaterThanOrEqual(6);
    for (const file of ["docs/claude-code.md", "docs/operations.md", "packages/middleware/README.md"])
      expect(
        snippets.some((s) => s.file === file),
        file,
      ).toBe(true);
  });

  it("are plain JavaScript that node parses as an ES module, no TypeScript syntax", () => {
    for (const [i, s] of snippets.entries()) {
      expect(s.lang, `${s.file}: a block importing @geode/… is marked ${s.lang}`).toBe("js");
      const file = path.join(work, `snippet-${i}.mjs`);
      writeFileSync(file, s.code);
      const check = spawnSync(process.execPath, ["--check", file], { encoding: "utf8" });
      expect(check.status, `${s.file}:\n${s.code}\n${check.stderr}`).toBe(0);
    }
  });

  it("import only names their packages export", async () => {
    for (const s of snippets)
      for (const [pkg, names] of namedImports(s.code)) {
        const mod = (await import(pkg)) as Record<string, unknown>;
        for (const name of names) expect(mod[name], `${s.file}: ${name} from ${pkg}`).toBeDefined();
      }
  });
});

describe("README quickstart", () => {
  it("installs the pinned pnpm with npm first; corepack (which needs the registry's signatures) comes second", () => {
    const pinned = (JSON.parse(read("package.json")) as { packageManager: string }).packageManager.split(
      "@",
    )[1];
    const requirements = read("README.md").split("## Quickstart")[1]?.split("```")[0] ?? "";
    const npm = requirements.indexOf(`npm i -g pnpm@${pinned}`);
    const corepack = requirements.indexOf("corepack enable");
    expect(npm, requirements).toBeGreaterThan(-1);
    if (corepack !== -1) expect(npm).toBeLessThan(corepack);
  });
});
