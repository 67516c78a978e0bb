import { encodeJson, silentLogger } from "@geode/bus";
import type { HookName } from "@geode/contracts";
import { NO_OBSERVER } from "@geode/service";
import { useTestEnv } from "@geode/testing";
import { describe, expect, it } from "vitest";
import { chainInput, handler, serveHandlers } from "./chain/chain-fixture.js";
import type { ChainInput } from "./chain/chain-step.js";
import type { HandlerRegistry, RegisteredHandler } from "./handler-registry.js";
import { runChain } from "./hook-chain.js";

const env = useTestEnv();
const pre = { tool_name: "fs.write", arguments: { path: "a" } };

/** Raw handlers on the test's namespace, each answering with the JSON `answer(envelope)`; undefined = none. */
function serve(hook: HookName, answers: Record<string, (envelope: Record<string, unknown>) => unknown>) {
  const { nc, names } = env();
  const json = Object.entries(answers).map(([name, answer]) => [
    name,
    (envelope: Record<string, unknown>) => {
      const out = answer(envelope);
      return out === undefined ? undefined : encodeJson(out);
    },
  ]);
  return serveHandlers(nc, names, hook, Object.fromEntries(json));
}

/** Runs a chain of `handlers` (in this order) over `payload`. */
function run(
  hook: HookName,
  payload: Record<string, unknown>,
  handlers: RegisteredHandler[],
  input: Partial<ChainInput> = {},
) {
  const registry = { handlers: () => handlers } as unknown as HandlerRegistry;
  const chain = chainInput(hook, payload, { input });
  const outcome = runChain(
    { nc: env().nc, registry, log: silentLogger(), observer: NO_OBSERVER },
    chain.input,
  );
  return { outcome, audits: chain.audits };
}
const h = (name: string, fields = {}, hook: HookName = "PreToolUse") => handler(hook, name, fields, env().ns);

describe("runChain", () => {
  it("folds each step into the outcome: the next handler sees the rewrite; earlier audits go out before each call", async () => {
    const handlers = serve("PreToolUse", {
      fixer: () => ({
        decision: { action: "rewrite", updates: { arguments: { path: "b" } } },
        audit_reason: "moved",
      }),
      quiet: () => ({ decision: null }),
      guard: () => ({ decision: { action: "block", reason: "no b" } }),
      after: () => ({ decision: null }),
    });
    try {
      const { outcome, audits } = run("PreToolUse", pre, [h("fixer"), h("quiet"), h("guard"), h("after")]);
      expect(await outcome).toMatchObject({
        name: "PreToolUse",
        payload: { tool_name: "fs.write", arguments: { path: "b" } },
        decisions: [
          { handler: "fixer", action: "rewrite" },
          { handler: "guard", action: "block", reason: "no b" },
        ],
        decision_sources: ["fixer", "guard"],
        handler_errors: [],
        blocked: true,
      });
      expect(handlers.seen.map((s) => s.name)).toEqual(["fixer", "quiet", "guard"]);
      expect(handlers.seen[1]?.envelope["payload"]).toEqual({
        tool_name: "fs.write",
        arguments: { path: "b" },
      });
      expect(audits.added.map((a) => [a.extension, a.status, a.reason])).toEqual([
        ["fixer", "ok", "moved"],
        ["quiet", "ok", ""],
        ["guard", "block", "no b"],
      ]);
      expect(audits.added[0]).toMatchObject({ surface: "hook", name: "PreToolUse" });
      expect(audits.publishes).toEqual([0, 1, 1]);
    } finally {
      handlers.close();
    }
  });

  it("an open handler's error goes on; a closed one's stops the chain, as does a closed handler's expired lease", async () => {
    const closed = { failure_mode: "closed" as const };
    const { outcome, audits } = run("PreToolUse", pre, [h("gone"), h("guard", closed), h("never")]);
    expect(await outcome).toMatchObject({
      decisions: [{ handler: "guard", action: "block", reason: "failure_mode closed: no responders" }],
      handler_errors: ["gone: no responders", "guard: no responders"],
      blocked: true,
    });
    expect(audits.added.map((a) => a.reason)).toEqual(["NoResponders", "NoResponders"]);

    const expired = { ...closed, heartbeat_at: Date.now() - 120_000 };
    const lease = run("PermissionRequest", { tool_name: "x", safety_level: "read", detail: "" }, [
      h("late", expired, "PermissionRequest"),
    ]);
    expect(await lease.outcome).toMatchObject({
      decisions: [{ handler: "late", action: "deny", reason: "failure_mode closed: lease expired" }],
      handler_errors: ["late: lease expired"],
      blocked: true,
    });
    expect(lease.audits.publishes).toEqual([]);
  });

  it("a closed guard refuses a call it cannot see whole before any handler runs", async () => {
    const guarded = { arguments: { command: "x" }, oversize: ["command"] };
    const { outcome, audits } = run("PreToolUse", pre, [h("open"), h("guard", { failure_mode: "closed" })], {
      guarded,
    });
    expect(await outcome).toMatchObject({
      decisions: [{ handler: "guard", action: "block" }],
      decision_sources: ["guard"],
      blocked: true,
    });
    expect(audits.added).toMatchObject([{ extension: "guard", status: "block" }]);
    expect(audits.publishes).toEqual([]);
  });

  it("the caller's cancellation while a handler runs audits it with the type only and rejects", async () => {
    const controller = new AbortController();
    const handlers = serve("PreToolUse", {
      first: () => ({ decision: null }),
      // The caller gives up while this one runs.
      stuck: () => void setTimeout(() => controller.abort(), 20),
    });
    try {
      const { outcome, audits } = run("PreToolUse", pre, [h("first"), h("stuck"), h("never")], {
        signal: controller.signal,
      });
      await expect(outcome).rejects.toMatchObject({ code: "timeout", details: { cancelled: true } });
      expect(audits.added.map((a) => [a.extension, a.status, a.reason])).toEqual([
        ["first", "ok", ""],
        ["stuck", "error", "Cancelled"],
      ]);
      expect(handlers.seen.map((s) => s.name)).toEqual(["first", "stuck"]);
    } finally {
      handlers.close();
    }
  });
});
