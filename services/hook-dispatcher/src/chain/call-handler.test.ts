import { encodeJson } from "@geode/bus";
import { useTestEnv } from "@geode/testing";
import { describe, expect, it } from "vitest";
import { callHandler } from "./call-handler.js";
import { chainInput, chainView, handler, serveHandlers } from "./chain-fixture.js";
import type { ChainInput } from "./chain-step.js";

const env = useTestEnv();
const payload = { user_input: "hi" };

/** A raw handler on the test's namespace; `seen` holds the envelopes it got. */
function serve(name: string, answer: () => Uint8Array | string | undefined) {
  const { nc, names } = env();
  const served = serveHandlers(nc, names, "UserPromptSubmit", { [name]: answer });
  return {
    get seen() {
      return served.seen.map((s) => s.envelope);
    },
    close: served.close,
  };
}

/** Calls one handler as the chain's first step. */
function call(name: string, fields = {}, input: Partial<ChainInput> = {}) {
  const chain = chainInput("UserPromptSubmit", payload, { input, correlation: { step_id: "st-1" } });
  const h = handler("UserPromptSubmit", name, fields, env().ns);
  return callHandler(env().nc, chain.input, chainView("UserPromptSubmit", payload), h);
}

describe("callHandler", () => {
  it("sends the envelope for the handler's schema version and returns its decision", async () => {
    const v2 = serve("v2", () => encodeJson({ decision: { action: "continue" } }));
    const v1 = serve("v1", () => encodeJson({ decision: null }));
    try {
      expect(await call("v2")).toEqual({ ok: true, decision: { action: "continue" } });
      expect(v2.seen[0]).toMatchObject({
        schema_version: "geode.public-hook.v2",
        name: "UserPromptSubmit",
        payload,
      });
      expect(v2.seen[0]?.["correlation"]).toMatchObject({ step_id: "st-1" });
      expect(await call("v1", { schema_version: "geode.public-hook.v1" })).toEqual({
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
      expect(await call("refused")).toEqual({
        ok: false,
        type: "InvalidDecision",
        message: "bad action",
      });
      expect(await call("broken")).toEqual({
        ok: false,
        type: "HandlerError",
        message: "boom",
      });
      expect(await call("garbage")).toEqual({
        ok: false,
        type: "InvalidDecision",
        message: "reply is not valid JSON",
      });
      expect(await call("nobody")).toEqual({
        ok: false,
        type: "NoResponders",
        message: "no responders",
      });
      expect(await call("silent", { timeout_ms: 50 })).toEqual({
        ok: false,
        type: "Timeout",
        message: "timed out after 50 ms",
      });
    } finally {
      for (const s of [refused, broken, garbage, silent]) s.close();
    }
  });

  it("the caller's deadline or cancellation while the handler runs ends the invocation; before it, the call throws", async () => {
    const silent = serve("stuck", () => undefined);
    try {
      expect(await call("stuck", {}, { deadline: Date.now() + 1_000 })).toMatchObject({
        ok: false,
        type: "Timeout",
        abort: { code: "timeout", message: "hook invocation exceeded the caller's deadline" },
      });

      const controller = new AbortController();
      const pending = call("stuck", {}, { signal: controller.signal });
      setTimeout(() => controller.abort(), 20);
      expect(await pending).toMatchObject({
        ok: false,
        type: "Cancelled",
        abort: { code: "timeout", details: { cancelled: true } },
      });

      await expect(call("stuck", {}, { deadline: Date.now() - 1 })).rejects.toMatchObject({
        code: "timeout",
      });
      await expect(call("stuck", {}, { signal: AbortSignal.abort() })).rejects.toMatchObject({
        details: { cancelled: true },
      });
      expect(silent.seen).toHaveLength(2);
    } finally {
      silent.close();
    }
  });
});
