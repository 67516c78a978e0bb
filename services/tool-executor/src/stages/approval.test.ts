import { encodeJson } from "@geode/bus";
import { describe, expect, it } from "vitest";
import { approval } from "./approval.js";
import { checkCall } from "./policy.js";
import { type HookScript, outcome, stageTool, useStageHarness } from "./stage-fixture.js";

let script: HookScript = (hook, payload) => outcome(hook, payload);
const { h, env } = useStageHarness({
  hooks: (hook, payload) => script(hook, payload),
  config: { approvalTimeoutMs: 2_000 },
  tools: [
    stageTool("plain.read"),
    stageTool("guarded.write", { effect: "mutation", requires_approval: true }),
  ],
});

async function shaped(name: string) {
  const call = h().open({ tool_name: name, operation_key: "op", arguments: { n: 1 } });
  await checkCall(call, name, { n: 1 });
  return call;
}

describe("approval stage", () => {
  it("does nothing for a tool that needs no approval and was not asked for", async () => {
    const before = h().invoked.length;
    expect(await approval(await shaped("plain.read"))).toBeUndefined();
    expect(h().invoked.length).toBe(before);
  });

  it("PermissionRequest: allow proceeds, deny denies with the handler's reason", async () => {
    script = (hook, payload) => outcome(hook, payload, [{ handler: "perm", action: "allow" }]);
    expect(await approval(await shaped("guarded.write"))).toBeUndefined();
    expect(h().invoked.at(-1)).toEqual({
      hook: "PermissionRequest",
      payload: { tool_name: "guarded.write", safety_level: "mutation", detail: 'guarded.write {"n":1}' },
    });
    script = (hook, payload) => outcome(hook, payload, [{ handler: "perm", action: "deny", reason: "no" }]);
    expect(await approval(await shaped("guarded.write"))).toMatchObject({
      status: "denied",
      reason: "perm: no",
    });
  });

  it("PreToolUse's request_permission asks even for a tool without requires_approval", async () => {
    script = (hook, payload) => outcome(hook, payload, [{ handler: "perm", action: "deny" }]);
    const call = await shaped("plain.read");
    call.preToolUse = outcome("PreToolUse", {}, [{ handler: "pre", action: "request_permission" }]);
    expect(await approval(call)).toMatchObject({ status: "denied", reason: "denied by perm" });
  });

  it("no decision goes to a human: nobody listening denies, an approver's allow proceeds", async () => {
    script = (hook, payload) => outcome(hook, payload);
    const denied = await approval(await shaped("guarded.write"));
    expect(denied).toMatchObject({ status: "denied" });
    expect(denied?.reason).toContain("no approver available");
    const { nc, names } = env();
    const sub = nc.subscribe(names.approvalRequest, {
      queue: "approvers",
      callback: (_err, m) => {
        m.respond(encodeJson({ decision: "allow", approver: "alice" }));
      },
    });
    try {
      expect(await approval(await shaped("guarded.write"))).toBeUndefined();
      const transitions = h().seen.filter((e) => "event" in e && e.event === "approval_transition");
      expect(transitions.at(-1)).toMatchObject({ payload: { decision: "allow", approver: "alice" } });
    } finally {
      sub.unsubscribe();
    }
  });
});
