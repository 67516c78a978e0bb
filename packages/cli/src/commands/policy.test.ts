import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { ensureBucket } from "@geode/bus";
import { PolicyRecordSchema, sha256 } from "@geode/contracts";
import { packText } from "@geode/policy";
import { useTestEnv } from "@geode/testing";
import { describe, expect, it } from "vitest";
import { runCliCaptured } from "../capture-io.js";

const env = useTestEnv();
const geode = (...argv: string[]) => runCliCaptured(argv, { ...process.env, ...env().env });
const dir = mkdtempSync(path.join(tmpdir(), "geode-policy-cli-"));
const file = (name: string, text: string) => {
  const p = path.join(dir, name);
  writeFileSync(p, text);
  return p;
};
const rmCall = JSON.stringify({ tool_name: "Bash", arguments: { command: "rm -rf /" } });

describe("geode policy", () => {
  it("add --pack stores the pack under its name; ls, show and rm", async () => {
    const added = await geode("policy", "add", "--pack", "destructive-shell", "--mode", "audit");
    expect(added.code).toBe(0);
    const kv = await ensureBucket(env().nc, env().names, "policies");
    const record = PolicyRecordSchema.parse(JSON.parse((await kv.get("destructive-shell"))?.string() ?? ""));
    expect(record).toMatchObject({
      name: "destructive-shell",
      mode: "audit",
      text: packText("destructive-shell"),
    });
    expect(record.sha256).toBe(sha256(record.text));

    const ls = await geode("policy", "ls");
    expect(ls.out).toMatch(/^destructive-shell\s+audit\s+[0-9a-f]{12}\s/m);
    const show = await geode("policy", "show", "destructive-shell");
    expect(show.out).toContain('@id("rm-recursive-force")');
    expect((await geode("policy", "rm", "destructive-shell")).code).toBe(0);
    expect((await geode("policy", "show", "destructive-shell")).code).toBe(1);
    expect((await geode("policy", "rm", "destructive-shell")).code).toBe(1);
  });

  it("refuses an invalid set with Cedar's message and its position, and writes nothing", async () => {
    const good = file(
      "good.cedar",
      'forbid (principal, action, resource) when { resource.kind == "shell" };\n',
    );
    expect((await geode("policy", "add", "mine", good)).code).toBe(0);
    const kv = await ensureBucket(env().nc, env().names, "policies");
    const before = (await kv.get("mine"))?.revision;

    const typo = file(
      "typo.cedar",
      'permit (principal, action, resource);\nforbid (principal, action, resource) when { context.comand like "*rm*" };\n',
    );
    const refused = await geode("policy", "add", "mine", typo);
    expect(refused.code).toBe(1);
    expect(refused.err).toMatch(/refused: policy set mine: 2:\d+: .*attribute `comand`/);
    const syntax = await geode("policy", "add", "mine", file("syntax.cedar", "forbid (principal,"));
    expect(syntax.code).toBe(1);
    expect(syntax.err).toMatch(/refused: policy set mine: 1:\d+: /);
    expect((await kv.get("mine"))?.revision).toBe(before);
    expect((await geode("policy", "add", "--pack", "no-such-pack")).err).toMatch(
      /no pack no-such-pack; the packs: /,
    );
  });

  it("ls and show say what is in force: a refused newer value is marked with why; a misnamed record is refused", async () => {
    const text = 'forbid (principal, action, resource) when { resource.kind == "web_fetch" };\n';
    expect((await geode("policy", "add", "kept", file("kept.cedar", text))).code).toBe(0);
    const kv = await ensureBucket(env().nc, env().names, "policies");
    const stored = JSON.parse((await kv.get("kept"))?.string() ?? "") as Record<string, unknown>;
    await kv.put("kept", JSON.stringify({ ...stored, text: "forbid (principal," }));
    // A record named as another key, alone under its key: refused, nothing of it in force.
    await kv.put("misnamed", JSON.stringify({ ...stored, name: "kept" }));

    const ls = await geode("policy", "ls");
    expect(ls.out).toMatch(
      new RegExp(
        `^kept\\s+enforce\\s+${String(stored["sha256"]).slice(0, 12)}\\s.*in force, newer refused`,
        "m",
      ),
    );
    expect(ls.out).toMatch(/^misnamed\s+-\s+-\s+-\s+-\s+refused\s*$/m);
    expect(ls.out).toMatch(
      /^kept: its newer value \(revision \d+\) was refused, revision \d+ is in force: policy set kept: 1:\d+: /m,
    );
    expect(ls.out).toContain("misnamed: its newer value (revision");
    expect(ls.out).toContain("nothing of it is in force: stored under the key misnamed but named kept");
    const json = JSON.parse((await geode("policy", "ls", "--json")).out) as Array<Record<string, unknown>>;
    expect(json.find((s) => s.name === "kept")).toMatchObject({
      in_force: true,
      sha256: stored["sha256"],
      refused: { reason: expect.stringMatching(/^policy set kept: 1:\d+: /) },
    });
    expect(json.find((s) => s.name === "misnamed")).toMatchObject({ in_force: false });

    const show = await geode("policy", "show", "kept");
    expect(show.code).toBe(0);
    expect(show.out).toContain(text);
    expect(show.out).toMatch(
      /^\/\/ its newer value \(revision \d+\) was refused, revision \d+ is in force: /m,
    );
    const misnamed = await geode("policy", "show", "misnamed");
    expect(misnamed.code).toBe(1);
    expect(misnamed.err).toContain("policy set misnamed is not in force");
    await kv.delete("misnamed");
    await kv.delete("kept");
  });

  it("refuses a set Cedar would give way on (hundreds of ||, deep brackets) with the refused form", async () => {
    const when = (cond: string) => `forbid (principal, action, resource) when { ${cond} };\n`;
    const clauses = (n: number, op: string) =>
      Array.from({ length: n }, (_, i) => `context.hook == "h${i}"`).join(` ${op} `);
    const shapes = {
      or: when(clauses(300, "||")),
      and: when(clauses(2_000, "&&")),
      parens: when(`${"(".repeat(200)}context.hook == "x"${")".repeat(200)}`),
      sets: when(`${"[".repeat(1_000)}1${"]".repeat(1_000)} == [1]`),
      members: when(`context${".a".repeat(2_000)} == 1`),
    };
    for (const [shape, text] of Object.entries(shapes)) {
      const refused = await geode("policy", "add", "deep", file(`${shape}.cedar`, text));
      expect({ shape, code: refused.code, err: refused.err }).toEqual({
        shape,
        code: 1,
        err: expect.stringMatching(
          /^refused: policy set deep: 1:\d+: the condition nests deeper than Cedar can evaluate/,
        ),
      });
    }
    const big = await geode(
      "policy",
      "add",
      "deep",
      file("big.cedar", `${when("true")}//${"x".repeat(300_000)}`),
    );
    expect(big.err).toMatch(/^refused: policy set deep: 1:1: the text has \d+ characters/);
    expect((await geode("policy", "show", "deep")).code).toBe(1);
  });

  it("test evaluates a pack or a file locally: decision, policies, reason; exit 3 on block", async () => {
    const noPlane = { ...process.env, ...env().env, NATS_URL: "nats://127.0.0.1:1" };
    const blocked = await runCliCaptured(
      [
        "policy",
        "test",
        "--pack",
        "destructive-shell",
        "--hook",
        "PreToolUse",
        "--payload",
        rmCall,
        "--json",
      ],
      noPlane,
    );
    expect(blocked.code).toBe(3);
    expect(JSON.parse(blocked.out)).toEqual({
      blocked: true,
      decision: "block",
      policies: ["destructive-shell.rm-recursive-force"],
      reason:
        "recursive forced deletion (rm -rf) is not allowed (policy destructive-shell.rm-recursive-force)",
    });
    const ask = await runCliCaptured(
      [
        "policy",
        "test",
        "--pack",
        "git-safety",
        "--hook",
        "PreToolUse",
        "--agent-kind",
        "gemini-cli",
        "--payload",
        JSON.stringify({ tool_name: "run_shell_command", arguments: { command: "git push origin main" } }),
      ],
      noPlane,
    );
    expect(ask.code).toBe(0);
    expect(ask.out).toMatch(/^decision: request_permission$/m);
    const scoped = file(
      "scoped.cedar",
      'forbid (principal in Geode::Group::"contractors", action, resource);\n',
    );
    const args = [
      "policy",
      "test",
      "--file",
      scoped,
      "--hook",
      "UserPromptSubmit",
      "--payload",
      '{"user_input":"hi"}',
    ];
    expect((await runCliCaptured([...args, "--group", "contractors"], noPlane)).code).toBe(3);
    expect((await runCliCaptured([...args, "--group", "staff"], noPlane)).code).toBe(0);
  });

  it("test without --pack or --file evaluates the stored sets with their modes and the agent's groups", async () => {
    await geode("agents", "add", "temp-1", "--group", "contractors");
    const scoped = file(
      "stored.cedar",
      'forbid (principal in Geode::Group::"contractors", action, resource);\n',
    );
    expect((await geode("policy", "add", "scoped", scoped)).code).toBe(0);
    const args = [
      "policy",
      "test",
      "--hook",
      "UserPromptSubmit",
      "--payload",
      '{"user_input":"hi"}',
      "--json",
    ];
    expect((await geode(...args, "--agent", "temp-1")).code).toBe(3);
    expect((await geode(...args, "--agent", "someone-else")).code).toBe(0);
    expect((await geode("policy", "add", "scoped", scoped, "--mode", "audit")).code).toBe(0);
    const audited = await geode(...args, "--agent", "temp-1");
    expect(audited.code).toBe(0);
    expect(JSON.parse(audited.out)).toMatchObject({
      blocked: false,
      decision: null,
      policies: ["scoped.policy0"],
    });
  });
});
