/**
 * `geode audit` says why: on the real plane (dispatcher, policy-guard, recorder, agent gateway), a
 * blocked call, an audit-mode set's "would block" and a call a policy sent to a person each show
 * their reason, the session's agent name and kind, and what the person decided, in the table and
 * in `--json`; a reason holding terminal escapes never reaches the terminal as one. The console's
 * approvals show the asking agent, its kind and the policy that asked.
 */
import { randomUUID } from "node:crypto";
import { startConsole } from "@geode/console";
import { CLAUDE_CODE_HOOK_PATH, HookName } from "@geode/contracts";
import { openProjectionDb } from "@geode/projection";
import { serveApprovals } from "@geode/sdk";
import { waitFor } from "@geode/testing";
import { beforeAll, describe, expect, it } from "vitest";
import { ccInput } from "./gateway-support.js";
import { usePolicyPlane } from "./policy-support.js";

const plane = usePolicyPlane("auditor", ["destructive-shell", "git-safety"]);

beforeAll(async () => {
  const added = await plane.geode(["policy", "add", "--pack", "secrets-read", "--mode", "audit"]);
  expect(added.code, added.err).toBe(0);
  await plane.guard().loaded(["destructive-shell", "git-safety", "secrets-read"]);
}, 60_000);

async function post(body: unknown): Promise<unknown> {
  const res = await fetch(`${plane.gateway().url}${CLAUDE_CODE_HOOK_PATH}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${plane.token()}` },
    body: JSON.stringify(body),
  });
  expect(res.status).toBe(200);
  const text = await res.text();
  return text === "" ? null : (JSON.parse(text) as unknown);
}

interface Row {
  name: string;
  extension: string;
  status: string;
  tool_call_id: string;
  agent: string | null;
  agent_kind: string | null;
  reason: string | null;
  approval: { decision: string; approver: string | null } | null;
}

describe("geode audit", () => {
  it("shows the reason, the agent's name and kind, and a person's decision", async () => {
    const approver = serveApprovals(
      { nc: plane.env().nc, names: plane.env().names },
      () => ({ decision: "allow", reason: "release day" }),
      { approver: "alice" },
    );
    await plane.env().nc.flush();
    // A handler whose reason tries to drive the terminal (colour, cursor up, a C1 CSI, bidi).
    await plane.scope().serve(HookName.PreToolUse, { name: "noisy" }, (e) =>
      String((e.payload["arguments"] as { command?: unknown }).command ?? "").includes("make")
        ? {
            action: "block",
            reason: `no make \u001b[31mred\u001b[1A \u009b2J \u202egnp.exe ${"x".repeat(200)}`,
          }
        : null,
    );
    try {
      const session = { session_id: randomUUID(), prompt_id: randomUUID() };
      await post(ccInput("SessionStart", { source: "startup", model: "claude-sonnet-4-5" }, session));
      const bash = (command: string, id: string) =>
        ccInput("PreToolUse", { tool_name: "Bash", tool_input: { command }, tool_use_id: id }, session);
      expect(JSON.stringify(await post(bash("rm -rf build", "toolu_rm")))).toContain('"deny"');
      const read = { tool_name: "Read", tool_input: { file_path: "/w/.env" }, tool_use_id: "toolu_env" };
      await post(ccInput("PreToolUse", read, session));
      expect(JSON.stringify(await post(bash("git push origin main", "toolu_push")))).toContain('"allow"');
      expect(JSON.stringify(await post(bash("make all", "toolu_make")))).toContain('"deny"');

      const audit = (...more: string[]) =>
        plane.geode(["audit", "--session", session.session_id, "--limit", "200", ...more]);
      let rows: Row[] = [];
      const policyRow = (id: string) =>
        rows.find((r) => r.name === "PreToolUse" && r.extension === "policy" && r.tool_call_id === id);
      await waitFor(async () => {
        const r = await audit("--json");
        rows = JSON.parse(r.out || "[]") as Row[];
        return (
          policyRow("toolu_push") !== undefined &&
          policyRow("toolu_env") !== undefined &&
          rows.some((x) => x.extension === "noisy" && x.status === "block")
        );
      }, 30_000);

      for (const r of rows) expect(r).toMatchObject({ agent: "auditor", agent_kind: "claude-code" });
      expect(policyRow("toolu_rm")).toMatchObject({
        status: "block",
        reason:
          "recursive forced deletion (rm -rf) is not allowed (policy destructive-shell.rm-recursive-force)",
        approval: null,
      });
      expect(policyRow("toolu_env")).toMatchObject({
        status: "ok",
        reason: "audit: would block: reading .env files is not allowed (policy secrets-read.env-file)",
      });
      expect(policyRow("toolu_push")).toMatchObject({
        status: "ok",
        reason: expect.stringContaining("pushing to a protected branch needs approval"),
        approval: { decision: "allow", approver: "alice" },
      });
      const noisy = rows.find((r) => r.extension === "noisy" && r.status === "block");
      expect(noisy?.reason).toMatch(/^no make /);
      expect(noisy?.reason?.length).toBeGreaterThan(200);
      expect(noisy?.reason).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u202e]/);

      const table = await audit();
      expect(table.code, table.err).toBe(0);
      expect(table.out).toMatch(/^time +session +agent .* status +latency +person +reason$/m);
      expect(table.out).toContain("auditor (claude-code)");
      expect(table.out).toMatch(/PreToolUse +policy +ok .* allow by alice +pushing to a protected branch/);
      expect(table.out).toContain("audit: would block: reading .env files is not allowed");
      expect(table.out).toContain("recursive forced deletion (rm -rf) is not allowed");
      expect(table.out).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202e]/);
      const noisyLine = table.out.split("\n").find((l) => l.includes("no make"));
      expect(noisyLine).toMatch(/no make .*…$/);
      expect([...(noisyLine?.slice(noisyLine.indexOf("no make")) ?? "")]).toHaveLength(80);
    } finally {
      await approver.close();
    }
  }, 90_000);
});

describe("the console's approvals", () => {
  it("show the agent, its kind and the policy that asked for a person", async () => {
    const { nc, names, databaseUrl, ns } = plane.env();
    const projection = await openProjectionDb({ ns, databaseUrl, migrate: false });
    const token = "console-token-for-approvals-test";
    const consoleApp = await startConsole({
      conn: { nc, names },
      token,
      port: 0,
      approvalTimeoutMs: 20_000,
      projection: { db: projection.db, ns },
    });
    const api = async (p: string, body?: unknown) => {
      const res = await fetch(`${consoleApp.url}${p}`, {
        method: body === undefined ? "GET" : "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return (await res.json()) as { items: Array<Record<string, unknown>> };
    };
    try {
      const session = { session_id: randomUUID(), prompt_id: randomUUID() };
      await post(ccInput("SessionStart", { source: "startup", model: "claude-sonnet-4-5" }, session));
      const push = ccInput(
        "PreToolUse",
        { tool_name: "Bash", tool_input: { command: "git push origin main" }, tool_use_id: "toolu_ask" },
        session,
      );
      const answered = post(push);
      let item: Record<string, unknown> | undefined;
      await waitFor(async () => {
        item = (await api("/api/approvals")).items.find(
          (a) => (a["correlation"] as { session_id: string }).session_id === session.session_id,
        );
        return item !== undefined && (item["policies"] as string[]).length > 0;
      }, 30_000);
      expect(item).toMatchObject({
        tool_name: "Bash",
        agent: "auditor",
        agent_kind: "claude-code",
        policies: ["git-safety.protected-branch-push"],
        policy_reason: "pushing to a protected branch needs approval",
      });
      await api("/api/approvals/answer", { approval_id: item?.["approval_id"], decision: "allow" });
      expect(JSON.stringify(await answered)).toContain('"allow"');
    } finally {
      await consoleApp.close();
      await projection.close();
    }
  }, 90_000);
});
