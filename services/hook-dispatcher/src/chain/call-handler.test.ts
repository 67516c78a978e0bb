import { encodeJson } from "@geode/bus";
import { useTestEnv } from "@geode/testing";
import type { Msg } from "@nats-io/transport-node";
import { describe, expect, it } from "vitest";
import { callHandler } from "./call-handler.js";
import { chainRun, handler } from "./chain-fixture.js";
import type { ChainInput } from "./chain-run.js";

const env = useTestEnv();
const payload = { user_input: "hi" };

/** A raw handler on the test's namespace answering with `answer(envelope)`; undefined = no reply. */
function serve(name: string, answer: (m: Msg) => Uint8Array | string | undefined) {
  const { nc, names } = env();
  const seen: Array<Record<string, unknown>> = [];
  const sub = nc.subscribe(names.hookHandler("UserPromptSubmit", name), {
    callback: (_err, m) => {
      seen.push(m.json());
      const out = answer(m);
      if (out !== undefined) m.respond(out);
    },
  });
  return { seen, close: () => sub.unsubscribe() };
}

function run(input: Partial<ChainInput> = {}) {
  return chainRun("UserPromptSubmit", payload, {
    ctx: { nc: env().nc },
    input,
    correlation: { step_id: "st-1" },
  });
}
const h = (name: string, fields = {}) => handler("UserPromptSubmit", name, fields, env().ns);

describe("callHandler", () => {
  it("sends the envelope for the handler's schema version and returns its decision; earlier audits go out first", async () => {
    const v2 = serve("v2", () => encodeJson({ decision: { action: "continue" } }));
    const v1 = serve("v1", () => encodeJson({ decision: null }));
    try {
      const { run: r, audits } = run();
      r.audit("before", "ok", "", 0);
      expect(await callHandler(r, h("v2"), 0)).toEqual({ ok: true, decision: { action: "continue" } });
      expect(audits.publishes).toEqual([1]);
      expect(v2.seen[0]).toMatchObject({
        schema_version: "geode.public-hook.v2",
        name: "UserPromptSubmit",
        payload,
      });
      expect(v2.seen[0]?.["correlation"]).toMatchObject({ step_id: "st-1" });
      expect(await callHandler(r, h("v1", { schema_version: "geode.public-hook.v1" }), 0)).toEqual({
        ok: true,
        decision: null,
      });
      expect(v1.seen[0]).toMatchObject({ schema_version: "geode.public-hook.v1" });
      expect(v1.seen[0]?.["correlation"]).not.toHaveProperty("step_id");
    } finally {
      v2.close();
      v1.close();
    }
  });

  it("error replies, bad replies, no responders and the handler's own timeout are handler errors", async () => {
    const refused = serve("refused", () =>
      encodeJson({
        error: { code: "invalid_request", message: "bad action", details: { kind: "invalid_decision" } },
      }),
    );
    const broken = serve("broken", () => encodeJson({ error: { code: "internal", message: "boom" } }));
    const garbage = serve("garbage", () => "{nope");
    const silent = serve("silent", () => undefined);
    try {
      const { run: r } = run();
      expect(await callHandler(r, h("refused"), 0)).toEqual({
        ok: false,
        type: "InvalidDecision",
        message: "bad action",
      });
      expect(await callHandler(r, h("broken"), 0)).toEqual({
        ok: false,
        type: "HandlerError",
        message: "boom",
      });
      expect(await callHandler(r, h("garbage"), 0)).toEqual({
        ok: false,
        type: "InvalidDecision",
        message: "reply is not valid JSON",
      });
      expect(await callHandler(r, h("nobody"), 0)).toEqual({
        ok: false,
        type: "NoResponders",
        message: "no responders",
      });
      expect(await callHandler(r, h("silent", { timeout_ms: 50 }), 0)).toEqual({
        ok: false,
        type: "Timeout",
        message: "timed out after 50 ms",
      });
    } finally {
      for (const s of [refused, broken, garbage, silent]) s.close();
    }
  });

  it("the caller's deadline or cancellation stops the chain, auditing the running handler with the type only", async () => {
    const silent = serve("stuck", () => undefined);
    try {
      const late = run({ deadline: Date.now() + 50 });
      await expect(callHandler(late.run, h("stuck"), 0)).rejects.toMatchObject({
        code: "timeout",
        message: "hook invocation exceeded the caller's deadline",
      });
      expect(late.audits.added).toMatchObject([{ extension: "stuck", status: "error", reason: "Timeout" }]);

      const controller = new AbortController();
      const cancelled = run({ signal: controller.signal });
      const pending = callHandler(cancelled.run, h("stuck"), 0);
      setTimeout(() => controller.abort(), 20);
      await expect(pending).rejects.toMatchObject({ code: "timeout", details: { cancelled: true } });
      expect(cancelled.audits.added).toMatchObject([{ status: "error", reason: "Cancelled" }]);

      const passed = run({ deadline: Date.now() - 1 });
      await expect(callHandler(passed.run, h("stuck"), 0)).rejects.toMatchObject({ code: "timeout" });
      expect(silent.seen).toHaveLength(2);
    } finally {
      silent.close();
    }
  });
});
