import { startActivityRecorder } from "@geode/activity-recorder";
import { startAgentGateway } from "@geode/agent-gateway";
import { CLAUDE_CODE_HOOK_PATH, HookName } from "@geode/contracts";
import { startHookDispatcher } from "@geode/hook-dispatcher";
import { createHookClient, createSessions, createToolClient, createVerifyClient } from "@geode/runtime";
import { serveApprovals, serveHook, serveTool } from "@geode/sdk";
import { useTestEnv, waitFor } from "@geode/testing";
import { startToolExecutor } from "@geode/tool-executor";
import { startVerifier } from "@geode/verifier";
import { Kvm } from "@nats-io/kv";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { addAgent, ccInput } from "./gateway-support.js";
import { useSecuredNats } from "./security-support.js";

// The five services, a handler, an approver, a tool provider and the runtime, each connected to a
// nats-server that runs the generated per-role configuration, each as its own user.
const env = useTestEnv(); // namespace and Postgres schema (dropped afterwards)
const { secured, as, stops } = useSecuredNats(() => ({
  namespace: env().ns,
  handlers: ["guard"],
  toolProviders: ["crm.note"],
}));

describe("the services on a secured NATS, each with its own user", () => {
  it("hooks, tools with approval, verification, the session's end and the projection work end to end", async () => {
    const names = env().names;
    const dispatcher = await startHookDispatcher({ nc: await as("hook-dispatcher"), names });
    stops.push(() => dispatcher.stop());
    const executor = await startToolExecutor({ nc: await as("tool-executor"), names, tools: [] });
    stops.push(() => executor.stop());
    const verifier = await startVerifier({ nc: await as("verifier"), names });
    stops.push(() => verifier.stop());
    const recorder = await startActivityRecorder({
      nc: await as("activity-recorder"),
      names,
      databaseUrl: env().databaseUrl,
      runsDir: null,
    });
    stops.push(() => recorder.stop());

    // A handler (its own user): blocks the shell tool, lets everything else through.
    const guard = await serveHook(
      { nc: await as("handler-guard"), names },
      HookName.PreToolUse,
      { name: "guard" },
      (e) => (e.payload["tool_name"] === "shell" ? { action: "block", reason: "no shell" } : null),
    );
    stops.push(() => guard.close());
    // A remote tool that needs a human approval, and an approver that allows it.
    const tool = await serveTool(
      { nc: await as("tool-crm.note"), names },
      {
        name: "crm.note",
        description: "adds a note",
        input_schema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
        effect: "mutation",
        requires_approval: true,
      },
      () => ({ result: { note_id: "n-1" } }),
    );
    stops.push(() => tool.close());
    const approvals = serveApprovals({ nc: await as("approver"), names }, () => "allow", { approver: "ops" });
    stops.push(() => approvals.close());
    await waitFor(() => dispatcher.handlers().length === 1);

    const runtime = { nc: await as("runtime"), names };
    const outcome = await createHookClient(runtime.nc, names).invoke(
      HookName.PreToolUse,
      { tool_name: "shell", arguments: { cmd: "rm -rf /" } },
      { session_id: "s-1", turn_id: "t-1" },
    );
    expect(outcome.blocked).toBe(true);
    expect(outcome.decisions).toEqual([expect.objectContaining({ handler: "guard", action: "block" })]);

    const reply = await createToolClient(runtime).execute({
      tool_name: "crm.note",
      arguments: { text: "called back" },
      correlation: { session_id: "s-1", turn_id: "t-1", tool_call_id: "c-1" },
    });
    expect(reply).toMatchObject({ status: "completed", result: { note_id: "n-1" }, executed: true });
    expect(reply.receipt).toMatchObject({ key: "s-1.c-1", state: "completed" });

    const verdict = await createVerifyClient(runtime).finalize({
      correlation: { session_id: "s-1", turn_id: "t-1" },
      candidate: { text: "The note is saved.", termination_reason: "natural", rounds: 1, tool_call_count: 1 },
    });
    expect(verdict).toMatchObject({ policy_action: "accept", deliver: true });

    // The session ends under the runtime's own user: SessionEnd fires, and the verifier (not the
    // runtime, which may not touch {ns}_verify) clears the session's verification state.
    const ends: string[] = [];
    const onEnd = await serveHook(
      { nc: await as("handler-guard"), names },
      HookName.SessionEnd,
      { name: "guard" },
      (e) => {
        ends.push(e.correlation.session_id);
        return null;
      },
    );
    stops.push(() => onEnd.close());
    await waitFor(() => dispatcher.handlers().length === 2);
    const sessions = createSessions(runtime);
    await sessions.start({ session_id: "s-1", model: "m", provider: "p" });
    const ended = await sessions.end("s-1", { reason: "done", status: "completed" });
    expect(ended).toMatchObject({ ended: true, record: { status: "completed" } });
    expect(ended.hookError).toBeUndefined();
    expect(ends).toEqual(["s-1"]);
    const verifyKv = await new Kvm(await as("operator")).open(names.buckets.verify);
    await waitFor(async () => {
      for await (const _ of await verifyKv.keys(names.verifySessionFilter("s-1"))) return false;
      return true;
    });

    // The recorder (read-only on the streams) projected the handler audit into Postgres.
    const db = new pg.Client({ connectionString: env().databaseUrl });
    await db.connect();
    try {
      const rows = await waitFor(async () => {
        const r = await db.query(
          `select extension, status from "${env().ns}".extension_invocations where surface = 'hook' order by stream_seq`,
        );
        return r.rows.length >= 1 ? r.rows : null;
      }, 20_000);
      expect(rows).toContainEqual({ extension: "guard", status: "block" });
    } finally {
      await db.end();
    }

    // The agent gateway (its own user): Claude Code's calls reach the same guard, verifier and approver.
    const operator = await as("operator");
    const token = await addAgent({ ...env(), nc: operator }, "laptop");
    const gateway = await startAgentGateway({
      nc: await as("agent-gateway"),
      names,
      config: { host: "127.0.0.1", port: 0 },
    });
    stops.push(() => gateway.stop());
    await waitFor(() => gateway.agents() === 1);
    const post = async (body: unknown) =>
      (await fetch(`${gateway.url}${CLAUDE_CODE_HOOK_PATH}`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}` },
        body: JSON.stringify(body),
      }).then((r) => r.json())) as unknown;
    const session = { session_id: "cc-1", prompt_id: "p-1" };
    expect(
      await post(ccInput("PreToolUse", { tool_name: "shell", tool_input: { cmd: "rm -rf /" } }, session)),
    ).toMatchObject({
      hookSpecificOutput: { permissionDecision: "deny", permissionDecisionReason: "guard: no shell" },
    });
    expect(
      await post(ccInput("PermissionRequest", { tool_name: "Bash", tool_input: { command: "ls" } }, session)),
    ).toEqual({
      hookSpecificOutput: { hookEventName: "PermissionRequest", decision: { behavior: "allow" } },
    });
    expect(await post(ccInput("Stop", { last_assistant_message: "Listed." }, session))).toEqual({});
    expect(await post(ccInput("SessionEnd", { reason: "other" }, session))).toEqual({});

    expect(secured().violations).toEqual([]);
  }, 120_000);
});
