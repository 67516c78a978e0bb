import { ERROR_CODES, RUNTIME_EVENTS, WIRE_LEGS } from "@geode/contracts";
import { describe, expect, it } from "vitest";
import { committedProtocolDoc, legTitle, renderProtocolDoc } from "../scripts/protocol-docs.js";

describe("docs/protocol.md", () => {
  it("is generated from the contracts (run `pnpm docs:protocol` after changing one)", () => {
    expect(committedProtocolDoc()).toBe(renderProtocolDoc());
  });

  it("has a section per request/reply leg with its subject, and every error code and event", () => {
    const doc = renderProtocolDoc();
    for (const leg of WIRE_LEGS) {
      expect(doc).toContain(`### ${legTitle(leg)}\n\nSubject \`${leg.subject}\``);
    }
    for (const code of ERROR_CODES) expect(doc).toContain(`| \`${code}\` |`);
    for (const event of RUNTIME_EVENTS)
      expect(doc).toMatch(new RegExp(`\\| \`${event}\` \\| (audit|ops|debug) \\|`));
  });

  it("documents each field of a leg with whether a sender must give it", () => {
    const doc = renderProtocolDoc();
    const toolExecute = doc.slice(doc.indexOf("### Execute a tool"), doc.indexOf("### Remote tool terminal"));
    expect(toolExecute).toContain("| `tool_name` | string | yes | non-empty |");
    expect(toolExecute).toContain("| `operation_key` | string | no | non-empty; at most 256 characters |");
    expect(toolExecute).toContain('| `receipt.state` | `"admitted"`, `"completed"`, `"failed"` | yes |  |');
  });
});
