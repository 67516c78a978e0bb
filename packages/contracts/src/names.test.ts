import { describe, expect, it } from "vitest";
import { HANDLER_NAME_PATTERN, names, recorderLagMessages, TOOL_NAME_PATTERN } from "./names.js";

describe("names(ns)", () => {
  it("builds every subject, stream, bucket and schema name of docs/protocol.md#names", () => {
    const n = names("acme_1");
    expect(n.ns).toBe("acme_1");
    expect(n.NS).toBe("ACME_1");
    expect(n.hookInvoke("PreToolUse")).toBe("acme_1.hook.invoke.PreToolUse");
    expect(n.hookInvokeAll).toBe("acme_1.hook.invoke.>");
    expect(n.hookHandler("PostVerify", "ci-gate")).toBe("acme_1.hook.handler.PostVerify.ci-gate");
    expect(n.hookHandlerAll).toBe("acme_1.hook.handler.>");
    expect(n.toolExecute).toBe("acme_1.tool.execute");
    expect(n.toolTerminal("fs.read")).toBe("acme_1.tool.terminal.fs.read");
    expect(n.approvalRequest).toBe("acme_1.approval.request");
    expect(n.mcpForward("fs")).toBe("acme_1.mcp.forward.fs");
    expect(n.verifyFinalize).toBe("acme_1.verify.finalize");
    expect(n.verifyResolve).toBe("acme_1.verify.resolve");
    expect(n.health("hook-dispatcher")).toBe("acme_1.health.hook-dispatcher");
    expect(n.event("extension_invoked")).toBe("acme_1.events.extension_invoked");
    expect(n.eventsAll).toBe("acme_1.events.>");
    expect(n.timeline("verification.decided")).toBe("acme_1.timeline.verification.decided");
    expect(n.timelineAll).toBe("acme_1.timeline.>");
    expect(n.eventsStream).toBe("ACME_1_EVENTS");
    expect(n.timelineStream).toBe("ACME_1_TIMELINE");
    expect(n.buckets).toEqual({
      hookHandlers: "acme_1_hook_handlers",
      toolReceipts: "acme_1_tool_receipts",
      verify: "acme_1_verify",
      sessions: "acme_1_sessions",
      runs: "acme_1_runs",
      tools: "acme_1_tools",
      agents: "acme_1_agents",
      webhooks: "acme_1_webhooks",
      policies: "acme_1_policies",
      mcpServers: "acme_1_mcp_servers",
      notary: "acme_1_notary",
      llmProviders: "acme_1_llm_providers",
      llmPrices: "acme_1_llm_prices",
      budgets: "acme_1_budgets",
      llmSpend: "acme_1_llm_spend",
    });
    expect(n.auditLog("events")).toBe("geode/acme_1/events");
    expect(n.auditLog("timeline")).toBe("geode/acme_1/timeline");
    expect(n.auditStream("timeline")).toBe("ACME_1_TIMELINE");
    expect(n.auditCheckpoint("events")).toBe("acme_1.audit.checkpoint.events");
    expect(n.auditCheckpointAll).toBe("acme_1.audit.checkpoint.>");
    expect(n.auditGap("timeline")).toBe("acme_1.audit.gap.timeline");
    expect(n.checkpointsStream).toBe("ACME_1_CHECKPOINTS");
    expect(n.pgSchema).toBe("acme_1");
    expect(n.handlerKey("PreToolUse", "guard")).toBe("PreToolUse.guard");
  });

  it("defaults to the geode namespace", () => {
    const n = names();
    expect(n.hookInvoke("Stop")).toBe("geode.hook.invoke.Stop");
    expect(n.eventsStream).toBe("GEODE_EVENTS");
  });

  it.each(["", "Geode", "1abc", "a-b", "a.b", "a b", `a${"b".repeat(32)}`, "_x", "ä"])(
    "refuses the namespace %j",
    (ns) => {
      expect(() => names(ns)).toThrow();
    },
  );

  it("accepts the longest namespace (32 characters)", () => {
    const ns = `a${"b".repeat(31)}`;
    expect(names(ns).ns).toBe(ns);
  });

  it("documents handler and tool name patterns", () => {
    expect(HANDLER_NAME_PATTERN.test("ci-gate_2")).toBe(true);
    expect(HANDLER_NAME_PATTERN.test("a.b")).toBe(false);
    expect(HANDLER_NAME_PATTERN.test("x".repeat(65))).toBe(false);
    expect(TOOL_NAME_PATTERN.test("fs.read")).toBe(true);
    expect(TOOL_NAME_PATTERN.test("fs read")).toBe(false);
  });
});

describe("recorderLagMessages", () => {
  it("counts what the recorder has not acknowledged, leaving out messages retention already removed", () => {
    expect(recorderLagMessages({ last_seq: 10, first_seq: 1 }, 7)).toBe(3);
    expect(recorderLagMessages({ last_seq: 10, first_seq: 1 }, 10)).toBe(0);
    // 1..5 are gone from the stream: only 6..10 wait, though the consumer acked none of them.
    expect(recorderLagMessages({ last_seq: 10, first_seq: 6 }, 0)).toBe(5);
    expect(recorderLagMessages({ last_seq: 0, first_seq: 0 }, 0)).toBe(0);
  });
});
