import { describe, expect, it } from "vitest";
import { PolicyEngine } from "./policy-engine.js";
import { schemaText } from "./policy-files.js";
import { policyReads, trimRequest } from "./policy-reads.js";
import { cedarRequests } from "./policy-request.js";
import { checkPolicySet } from "./policy-set.js";

const caller = { agent: "a", agentKind: "claude-code" as const, groups: ["staff", "admins"] };
const bash = { tool_name: "Bash", arguments: { command: "rm -rf build" } };
const engineOf = (text: string) => new PolicyEngine([checkPolicySet("s", text, "enforce", schemaText())]);
const matcherOf = (text: string) =>
  checkPolicySet("s", text, "enforce", schemaText()).policies.map((p) => p.matcher);

describe("policyReads", () => {
  it("names the context attributes and entities a set reads, no more", () => {
    const reads = policyReads(
      matcherOf(`forbid (principal, action, resource) when { context has command && context.command like "rm*" };
forbid (principal, action, resource) when { context has path && resource.kind == "file_read" };`),
    );
    expect(reads).toEqual({ context: new Set(["command", "path"]), principal: false, resource: true });
  });

  it("reads everything of what a policy uses whole", () => {
    expect(
      policyReads(matcherOf(`forbid (principal in Geode::Group::"x", action, resource);`)).principal,
    ).toBe(true);
    // Not valid against the schema, but a policy's JSON form may take the context whole.
    const whole = policyReads([
      `permit (principal, action, resource) when { context == { "hook": "PreToolUse" } };`,
    ]);
    expect(whole.context).toBe("all");
  });

  it("trims a request to what is read, keeping the principal's groups as its parents", () => {
    const [request] = cedarRequests("PreToolUse", bash, "s", caller);
    const trimmed = trimRequest(request!, {
      context: new Set(["command"]),
      principal: true,
      resource: false,
    });
    expect(trimmed.context).toEqual({ command: "rm -rf build" });
    expect(trimmed.entities).toEqual([
      {
        uid: { type: "Geode::Agent", id: "a" },
        attrs: {},
        parents: [
          { type: "Geode::Group", id: "staff" },
          { type: "Geode::Group", id: "admins" },
        ],
      },
    ]);
  });

  it("decides as with the whole request: groups, the resource's kind, an absent attribute", () => {
    const group = engineOf(`@id("g") forbid (principal in Geode::Group::"admins", action, resource);`);
    expect(group.evaluate("PreToolUse", bash, "s", caller).enforce.policies).toEqual(["s.g"]);
    expect(
      group.evaluate("PreToolUse", bash, "s", { ...caller, groups: ["staff"] }).enforce.policies,
    ).toEqual([]);
    const kind = engineOf(
      `@id("k") forbid (principal, action, resource) when { resource.kind == "shell" && context has command };`,
    );
    expect(kind.evaluate("PreToolUse", bash, "s", caller).enforce.policies).toEqual(["s.k"]);
    expect(
      kind.evaluate("PreToolUse", { tool_name: "Read", arguments: { file_path: "a" } }, "s", caller).enforce
        .policies,
    ).toEqual([]);
    const absent = engineOf(`@id("u") forbid (principal, action, resource) unless { context has url };`);
    expect(absent.evaluate("PreToolUse", bash, "s", caller).enforce.policies).toEqual(["s.u"]);
  });
});
