import { startAgentGateway } from "@geode/agent-gateway";
import { CLAUDE_CODE_HOOK_PATH, HookName } from "@geode/contracts";
import { startHookDispatcher } from "@geode/hook-dispatcher";
import { startPolicyGuard } from "@geode/policy-guard";
import { createHookClient } from "@geode/runtime";
import { ToolStore } from "@geode/state";
import { useTestEnv, waitFor } from "@geode/testing";
import { describe, expect, it } from "vitest";
import { addAgent, ccInput } from "./gateway-support.js";
import { keptLogger, putPack } from "./policy-support.js";
import { useSecuredNats } from "./security-support.js";

// The policy-guard on a nats-server running the generated per-role configuration, as its own user.
const env = useTestEnv();
const { secured, as, stops } = useSecuredNats(() => ({ namespace: env().ns }));

describe("the policy-guard with its own NATS user", () => {
  it("serves its hooks, reads policies, agents, sessions and tools, and needs nothing more", async () => {
    const names = env().names;
    const operator = await as("operator");
    await putPack({ ...env(), nc: operator }, "destructive-shell");
    await putPack({ ...env(), nc: operator }, "mcp-safety");
    await (await ToolStore.open({ nc: operator, names })).publish({
      name: "fs_delete_file",
      description: "deletes a file",
      input_schema: { type: "object" },
      effect: "mutation",
      requires_approval: false,
      mcp: { server: "fs", tool: "delete_file", annotations: { destructiveHint: true } },
    });
    const dispatcher = await startHookDispatcher({ nc: await as("hook-dispatcher"), names });
    stops.push(() => dispatcher.stop());
    const lines: Array<{ msg: string; fields: unknown }> = [];
    const guard = await startPolicyGuard({ nc: await as("policy-guard"), names, log: keptLogger(lines) });
    stops.push(() => guard.stop());
    await waitFor(() => dispatcher.handlers().filter((h) => h.name === "policy").length === 4);
    await waitFor(() => guard.loader.engine.loaded().length === 2);
    expect(guard.loader.engine.loaded().map((s) => s.name)).toEqual(["destructive-shell", "mcp-safety"]);

    const hooks = createHookClient(await as("runtime"), names);
    const invoke = (payload: Record<string, unknown>) =>
      hooks.invoke(HookName.PreToolUse, payload as never, { session_id: "s-1", turn_id: "t-1" });
    const outcome = await invoke({ tool_name: "Bash", arguments: { command: "rm -rf /" } });
    expect(outcome.decisions).toEqual([expect.objectContaining({ handler: "policy", action: "block" })]);
    // A registered MCP tool, and a name of its form that is not registered (read from KV).
    const mcp = await invoke({ tool_name: "fs_delete_file", arguments: { path: "a" } });
    expect(mcp.decisions).toEqual([
      expect.objectContaining({ handler: "policy", action: "request_permission" }),
    ]);
    expect((await invoke({ tool_name: "fs_absent", arguments: {} })).decisions).toEqual([]);

    const token = await addAgent({ ...env(), nc: operator }, "laptop");
    const gateway = await startAgentGateway({
      nc: await as("agent-gateway"),
      names,
      config: { host: "127.0.0.1", port: 0 },
    });
    stops.push(() => gateway.stop());
    await waitFor(() => gateway.agents() === 1);
    const res = await fetch(`${gateway.url}${CLAUDE_CODE_HOOK_PATH}`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}` },
      body: JSON.stringify(ccInput("PreToolUse", { tool_name: "Bash", tool_input: { command: "rm -fr ~" } })),
    }).then((r) => r.json());
    expect(res).toMatchObject({ hookSpecificOutput: { permissionDecision: "deny" } });
    expect(lines.filter((l) => /failed|denied|permission/i.test(l.msg))).toEqual([]);
    expect(secured().violations).toEqual([]);
  }, 60_000);
});
