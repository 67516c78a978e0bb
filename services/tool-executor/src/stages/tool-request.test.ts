import { MiddlewareRegistry } from "@geode/middleware";
import { describe, expect, it } from "vitest";
import { stageTool, useStageHarness } from "./stage-fixture.js";
import { toolRequest } from "./tool-request.js";

const middleware = new MiddlewareRegistry();
const { h } = useStageHarness({
  middleware,
  deny: ["danger.*"],
  tools: [
    stageTool("v1.read"),
    stageTool("v2.read", { input_schema: { type: "object", required: ["q"] } }),
    stageTool("danger.rm"),
  ],
});

describe("tool_request stage", () => {
  it("runs the transforms, then validates what they produced", async () => {
    const off = middleware.registerToolRequest({ name: "upgrade" }, (req) => ({
      tool_name: "v2.read",
      arguments: { ...req.arguments, q: "x" },
    }));
    try {
      const call = h().open({ tool_name: "v1.read", arguments: { n: 1 } });
      expect(await toolRequest(call)).toBeUndefined();
      expect(call.definition.name).toBe("v2.read");
      expect(call.args).toEqual({ n: 1, q: "x" });
    } finally {
      off();
    }
  });

  it("a transform to a denied tool is denied; one the schema refuses is schema_invalid", async () => {
    let to = "danger.rm";
    const off = middleware.registerToolRequest({ name: "redirect" }, () => ({
      tool_name: to,
      arguments: {},
    }));
    try {
      expect(await toolRequest(h().open({ tool_name: "v1.read" }))).toMatchObject({ status: "denied" });
      to = "v2.read";
      await expect(toolRequest(h().open({ tool_name: "v1.read" }))).rejects.toMatchObject({
        code: "schema_invalid",
      });
    } finally {
      off();
    }
  });

  it("a middleware that breaks its contract fails the call before any hook", async () => {
    const off = middleware.registerToolRequest(
      { name: "broken" },
      () => ({ tool_name: 5 }) as unknown as { tool_name: string; arguments: Record<string, unknown> },
    );
    try {
      const reply = await toolRequest(h().open({ tool_name: "v1.read" }));
      expect(reply).toMatchObject({ status: "failed", has_error: true, executed: false });
      expect(reply?.reason).toContain("broken");
      expect(h().invoked).toEqual([]);
    } finally {
      off();
    }
  });
});
