import { randomUUID } from "node:crypto";
import { ensureBucket } from "@geode/bus";
import { type AgentRecord, type DispatchOutcome, HookName, sha256 } from "@geode/contracts";
import { createHookClient } from "@geode/runtime";
import { serveApprovals } from "@geode/sdk";
import { HandlerRegistrations } from "@geode/state";
import { waitFor } from "@geode/testing";
import { DeliverPolicy } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ccInput, useGatewayFixture } from "./gateway-support.js";
import { CORRELATION } from "./hooks-support.js";
import { keptLogger, putPack, putPolicy, type RunningGuard, startGuard } from "./policy-support.js";

const fx = useGatewayFixture({ approvalTimeoutMs: 3_000 });
const logs: Array<{ msg: string; fields: unknown }> = [];
let running: RunningGuard;

beforeAll(async () => {
  running = await startGuard(fx.env(), keptLogger(logs));
  await fx.scope().known(HookName.PreToolUse, "policy");
});
afterAll(async () => {
  // The last test cut the guard's connection off, as a crash would.
  await running.guard.stop().catch(() => undefined);
});

const bash = (command: string) => ({ tool_name: "Bash", arguments: { command } });
const invoke = (
  payload: Record<string, unknown>,
  hook: HookName = HookName.PreToolUse,
  session: string = randomUUID(),
) =>
  createHookClient(fx.env().nc, fx.env().names).invoke(hook, payload as never, {
    ...CORRELATION,
    session_id: session,
  });
const ccPreToolUse = (command: string, token?: string) =>
  fx.post(
    ccInput("PreToolUse", {
      tool_name: "Bash",
      tool_input: { command },
      tool_use_id: `toolu_${randomUUID()}`,
    }),
    {
      ...(token ? { token } : {}),
    },
  );

/** The `extension_invoked` audits of the handler `policy` in one session. */
async function policyAudits(sessionId: string): Promise<Array<{ status: string; reason: string }>> {
  const { js, names } = fx.env();
  const consumer = await js.consumers.get(names.eventsStream, {
    deliver_policy: DeliverPolicy.All,
    filter_subjects: names.event("extension_invoked"),
  });
  const info = await consumer.info(true);
  const out: Array<{ status: string; reason: string }> = [];
  if (info.num_pending === 0) return out;
  const batch = await consumer.fetch({ max_messages: info.num_pending, expires: 2_000 });
  for await (const m of batch) {
    const e = m.json<{
      correlation: { session_id: string };
      payload: { extension: string; status: string; reason: string };
    }>();
    if (e.correlation.session_id === sessionId && e.payload.extension === "policy")
      out.push({ status: e.payload.status, reason: e.payload.reason });
    if (m.info.pending === 0) break;
  }
  return out;
}

describe("the policy-guard on the plane", () => {
  it("registers as the closed handler policy, priority 10, for its four hooks", async () => {
    const regs = await (await HandlerRegistrations.open({ nc: fx.env().nc, names: fx.env().names })).list();
    const mine = regs.filter((r) => r.name === "policy");
    expect(mine.map((r) => r.hook).sort()).toEqual([
      "PermissionRequest",
      "PostToolUse",
      "PreToolUse",
      "UserPromptSubmit",
    ]);
    for (const r of mine) expect(r).toMatchObject({ priority: 10, failure_mode: "closed" });
  });

  it("a pack blocks rm -rf through the dispatcher and through the Claude Code endpoint", async () => {
    await putPack(fx.env(), "destructive-shell");
    await running.loaded(["destructive-shell"]);
    const blocked = await invoke(bash("sudo rm -r -f /srv"));
    expect(blocked.blocked).toBe(true);
    expect(blocked.decisions).toEqual([
      expect.objectContaining({
        handler: "policy",
        action: "block",
        reason: expect.stringContaining("destructive-shell.rm-recursive-force"),
      }),
    ]);
    expect((await invoke(bash("ls -la"))).blocked).toBe(false);

    const res = await ccPreToolUse("rm -rf /");
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      hookSpecificOutput: {
        hookEventName: "PreToolUse",
        permissionDecision: "deny",
        permissionDecisionReason: expect.stringContaining("recursive forced deletion"),
      },
    });
    expect((await ccPreToolUse("git status")).body).not.toMatchObject({
      hookSpecificOutput: { permissionDecision: "deny" },
    });
  });

  it("an @ask policy reaches the approvers", async () => {
    await putPack(fx.env(), "git-safety");
    await running.loaded(["destructive-shell", "git-safety"]);
    const asked: string[] = [];
    const approver = serveApprovals({ nc: fx.env().nc, names: fx.env().names }, (r) => {
      asked.push(r.tool_name);
      return { decision: "deny", reason: "not today" };
    });
    try {
      await fx.env().nc.flush();
      const direct = await invoke(bash("git push origin main"));
      expect(direct.decisions).toEqual([
        expect.objectContaining({
          handler: "policy",
          action: "request_permission",
          reason: expect.stringContaining("git-safety.protected-branch-push"),
        }),
      ]);
      const res = await ccPreToolUse("git push origin main");
      expect(asked).toEqual(["Bash"]);
      expect(res.body).toMatchObject({ hookSpecificOutput: { permissionDecision: "deny" } });
    } finally {
      await approver.close();
    }
  });

  it("audit mode records the would-be decision and the deciding policies, but does not block", async () => {
    await putPack(fx.env(), "destructive-shell", "audit");
    await waitFor(() =>
      running.guard.loader.engine.loaded().some((s) => s.name === "destructive-shell" && s.mode === "audit"),
    );
    const session = `audit-${randomUUID()}`;
    const marker = "rm -rf /tmp/very-private-marker-path";
    const out = await invoke(bash(marker), HookName.PreToolUse, session);
    expect(out.blocked).toBe(false);
    expect(out.decisions).toEqual([]);
    const audits = await waitFor(async () => {
      const found = await policyAudits(session);
      return found.length > 0 ? found : null;
    });
    expect(audits).toEqual([
      {
        status: "ok",
        reason:
          "audit: would block: recursive forced deletion (rm -rf) is not allowed (policy destructive-shell.rm-recursive-force)",
      },
    ]);
    expect(JSON.stringify(audits)).not.toContain("very-private-marker");
    await putPack(fx.env(), "destructive-shell");
  });

  it("a permit never overrides another handler's block", async () => {
    await putPolicy(fx.env(), "allow-all", "permit (principal, action, resource);");
    await running.loaded(["destructive-shell", "git-safety", "allow-all"]);
    await fx.scope().serve(HookName.PreToolUse, { name: "later-guard", priority: 20 }, () => ({
      action: "block",
      reason: "no",
    }));
    const out = await invoke(bash("ls"));
    expect(out.blocked).toBe(true);
    expect(out.decisions).toEqual([expect.objectContaining({ handler: "later-guard", action: "block" })]);
  });

  it("a change applies within a second without a restart", async () => {
    const text =
      '@id("no-touch") forbid (principal, action, resource) when { context has command && context.command like "touch *" };';
    const started = Date.now();
    await putPolicy(fx.env(), "hot", text);
    let elapsed = 0;
    await waitFor(
      async () => {
        const blocked = (await invoke(bash("touch x"))).blocked;
        elapsed = Date.now() - started;
        return blocked;
      },
      5_000,
      20,
    );
    expect(elapsed).toBeLessThan(1_000);
    const removed = Date.now();
    const { nc, names } = fx.env();
    await (await ensureBucket(nc, names, "policies")).delete("hot");
    await waitFor(async () => !(await invoke(bash("touch x"))).blocked, 5_000, 20);
    expect(Date.now() - removed).toBeLessThan(1_000);
  });

  it("a bad value written to KV is skipped and logged; the last good set stays in force", async () => {
    const kv = await ensureBucket(fx.env().nc, fx.env().names, "policies");
    const good = (await kv.get("destructive-shell"))?.revision;
    expect(good).toBeGreaterThan(0);
    await kv.put("destructive-shell", "{not json");
    const broken = {
      name: "destructive-shell",
      text: "forbid (principal,",
      sha256: sha256("x"),
      mode: "enforce",
      created_at: 1,
      updated_by: "x",
    };
    await kv.put("destructive-shell", JSON.stringify(broken));
    await waitFor(() => logs.some((l) => l.msg.includes("skipping an invalid policy set")));
    expect(logs.some((l) => l.msg.includes("not a valid record"))).toBe(true);
    expect((await invoke(bash("rm -rf /"))).blocked).toBe(true);
    await putPack(fx.env(), "destructive-shell");
  });

  it("scopes a policy by group: contractors, not staff", async () => {
    const kv = await ensureBucket(fx.env().nc, fx.env().names, "agents");
    const tokens: Record<string, string> = {};
    for (const [name, group] of [
      ["temp-1", "contractors"],
      ["emp-1", "staff"],
    ] as const) {
      tokens[name] = `geode_${randomUUID()}`;
      const record: AgentRecord = {
        name,
        token_sha256: sha256(tokens[name]),
        created_at: Date.now(),
        groups: [group],
      };
      await kv.put(name, JSON.stringify(record));
    }
    await waitFor(() => fx.gateway().agents() === 3);
    await putPolicy(
      fx.env(),
      "contractors",
      '@reason("contractors may not use the shell") forbid (principal in Geode::Group::"contractors", action == Geode::Action::"call_tool", resource) when { resource.kind == "shell" };',
    );
    await running.loaded(["destructive-shell", "git-safety", "allow-all", "contractors"]);
    const contractor = await ccPreToolUse("echo hi", tokens["temp-1"]);
    expect(contractor.body).toMatchObject({
      hookSpecificOutput: {
        permissionDecision: "deny",
        permissionDecisionReason: expect.stringContaining("contractors may not use the shell"),
      },
    });
    const staff = await ccPreToolUse("echo hi", tokens["emp-1"]);
    expect(JSON.stringify(staff.body)).not.toContain("deny");
  });

  it("decides UserPromptSubmit, PermissionRequest and PostToolUse with their own actions", async () => {
    await putPolicy(
      fx.env(),
      "other-hooks",
      [
        '@id("no-deploy-prompt") forbid (principal, action == Geode::Action::"submit_prompt", resource) when { context has prompt && context.prompt like "*deploy to prod*" };',
        '@id("no-fetch") forbid (principal, action == Geode::Action::"call_tool", resource) when { context.hook == "PermissionRequest" && resource.kind == "web_fetch" };',
        '@id("ask-writes") @ask forbid (principal, action == Geode::Action::"call_tool", resource) when { context.hook == "PermissionRequest" && resource.kind == "file_write" };',
        '@id("failed-shell") forbid (principal, action == Geode::Action::"use_result", resource) when { resource.kind == "shell" && context has has_error && context.has_error };',
      ].join("\n"),
    );
    await waitFor(() => running.guard.loader.engine.loaded().some((s) => s.name === "other-hooks"));
    const prompt = await invoke({ user_input: "please deploy to prod now" }, HookName.UserPromptSubmit);
    expect(prompt.decisions).toEqual([expect.objectContaining({ handler: "policy", action: "block" })]);
    const permission = (tool_name: string) =>
      invoke({ tool_name, safety_level: "mutation", detail: "x" }, HookName.PermissionRequest);
    expect((await permission("WebFetch")).decisions).toEqual([expect.objectContaining({ action: "deny" })]);
    expect((await permission("Write")).decisions).toEqual([expect.objectContaining({ action: "ask" })]);
    const post = (has_error: boolean) =>
      invoke({ ...bash("make"), result: { output: "x" }, has_error, executed: true }, HookName.PostToolUse);
    expect((await post(true)).decisions).toEqual([expect.objectContaining({ action: "block" })]);
    expect((await post(false)).decisions).toEqual([]);
    const { nc, names } = fx.env();
    await (await ensureBucket(nc, names, "policies")).delete("other-hooks");
  });

  it("skips a set Cedar would give way on, written to KV directly, and keeps serving; deep arguments too", async () => {
    const when = (cond: string) => `forbid (principal, action, resource) when { ${cond} };`;
    const clauses = (n: number) =>
      Array.from({ length: n }, (_, i) => `context.hook == "h${i}"`).join(" || ");
    const shapes = [
      when(clauses(300)),
      when(`${"(".repeat(200)}context.hook == "x"${")".repeat(200)}`),
      when(`${"[".repeat(1_000)}1${"]".repeat(1_000)} == [1]`),
      when(`context${".a".repeat(2_000)} == 1`),
    ];
    for (const text of shapes) {
      const seen = logs.length;
      await putPolicy(fx.env(), "deep", text);
      await waitFor(() =>
        logs
          .slice(seen)
          .some((l) => JSON.stringify(l.fields).includes("nests deeper than Cedar can evaluate")),
      );
      expect((await invoke(bash("rm -rf /"))).blocked).toBe(true);
      expect((await invoke(bash("ls"))).blocked).toBe(false);
    }
    // Arguments nested deeper than the sanitizer keeps (8), around a command the pack refuses: the
    // guard decides on the command; a body deeper than the wire allows is refused with a code.
    const nested = (depth: number) => {
      let deep: Record<string, unknown> = { leaf: "x" };
      for (let i = 0; i < depth; i++) deep = { nested: deep };
      return { tool_name: "Bash", arguments: { command: "rm -rf /", deep } };
    };
    expect((await invoke(nested(120))).blocked).toBe(true);
    await expect(invoke(nested(1_000))).rejects.toThrow("body nests deeper than 128 levels");
    expect((await invoke(bash("ls"))).blocked).toBe(false);
    const { nc, names } = fx.env();
    await (await ensureBucket(nc, names, "policies")).delete("deep");
  });

  it("a set whose current value is bad is enforced from its last good version after a restart", async () => {
    const text =
      '@id("no-cowsay") @reason("cowsay is refused") forbid (principal, action, resource) when { context has command && context.command like "cowsay *" };';
    await putPolicy(fx.env(), "restart", text);
    await waitFor(async () => (await invoke(bash("cowsay moo"))).blocked);
    const kv = await ensureBucket(fx.env().nc, fx.env().names, "policies");
    const record = (fields: Record<string, unknown>) =>
      JSON.stringify({
        name: "restart",
        text,
        sha256: sha256(text),
        mode: "enforce",
        created_at: 1,
        updated_by: "x",
        ...fields,
      });
    // Four bad values over the good one, as other means than `geode policy add` could write them:
    // not JSON, not a record, a record named as another key, a text Cedar refuses.
    const seen = logs.length;
    await kv.put("restart", "{not json");
    await kv.put("restart", record({ mode: "strict" }));
    await kv.put("restart", record({ name: "other" }));
    await kv.put("restart", record({ text: "forbid (principal," }));
    await waitFor(() => logs.slice(seen).some((l) => l.msg.includes("skipping an invalid policy set")));
    expect((await invoke(bash("cowsay moo"))).blocked).toBe(true);

    // Stop the guard as a kill would, and start it again: the forbid still applies.
    await running.nc.close();
    await running.guard.stop().catch(() => undefined);
    const restarted = logs.length;
    running = await startGuard(fx.env(), keptLogger(logs));
    expect(running.guard.loader.engine.loaded().map((s) => s.name)).toContain("restart");
    let decided: DispatchOutcome | undefined;
    await waitFor(async () => {
      decided = await invoke(bash("cowsay moo"));
      return !decided.decisions.some((d) => d.reason?.startsWith("failure_mode closed"));
    });
    expect(decided?.blocked).toBe(true);
    expect(decided?.decisions).toEqual([
      expect.objectContaining({
        handler: "policy",
        action: "block",
        reason: expect.stringContaining("cowsay is refused"),
      }),
    ]);
    expect((await invoke(bash("ls"))).blocked).toBe(false);
    expect(logs.slice(restarted)).toContainEqual(
      expect.objectContaining({
        msg: "a policy set's stored value was refused; enforcing its last good version",
        fields: expect.objectContaining({
          key: "restart",
          error: expect.stringContaining("policy set restart: 1:"),
        }),
      }),
    );
  });

  it("fails closed: with the guard gone, its hooks block", async () => {
    await running.nc.close();
    const out: DispatchOutcome = await invoke(bash("ls"));
    expect(out.blocked).toBe(true);
    expect(out.decisions).toEqual([
      expect.objectContaining({
        handler: "policy",
        action: "block",
        reason: "failure_mode closed: no responders",
      }),
    ]);
    const res = await ccPreToolUse("ls");
    expect(res.body).toMatchObject({ hookSpecificOutput: { permissionDecision: "deny" } });
  });
});
