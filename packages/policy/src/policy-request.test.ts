import { describe, expect, it } from "vitest";
import { cedarRequests } from "./policy-request.js";

describe("cedarRequests", () => {
  it("gives a tool named like an Object.prototype member the kind `other`", () => {
    for (const name of Object.getOwnPropertyNames(Object.prototype))
      for (const agentKind of ["claude-code", undefined] as const) {
        const [request] = cedarRequests(
          "PreToolUse",
          { tool_name: name, arguments: { command: "ls" } },
          "s",
          { agent: "a", groups: [], ...(agentKind ? { agentKind } : {}) },
        );
        expect(request?.entities.at(-1)?.attrs, `${agentKind} ${name}`).toEqual({ kind: "other" });
        expect(request?.context["command"]).toBeUndefined();
      }
  });
});
