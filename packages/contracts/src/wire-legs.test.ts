import { describe, expect, it } from "vitest";
import { correlation } from "./correlation.js";
import { ErrorCode, GeodeError } from "./errors.js";
import { hookEnvelope } from "./hook-envelope.js";
import { isMalformedReply } from "./wire-codec.js";
import { HookHandlerLeg, invalidDecision, isInvalidDecision, WIRE_LEGS } from "./wire-legs.js";

const thrown = (f: () => unknown): unknown => {
  try {
    f();
  } catch (e) {
    return e;
  }
  return undefined;
};

describe("wire legs", () => {
  it("every leg refuses a request that is not an object of its shape with invalid_request and the issues", () => {
    for (const leg of WIRE_LEGS) {
      for (const body of [null, [], "x", 42, { unexpected: true }]) {
        if (
          leg.subject.includes("health") &&
          typeof body === "object" &&
          body !== null &&
          !Array.isArray(body)
        )
          continue; // unknown fields aside, a health request has no shape to get wrong
        const err = thrown(() => leg.request.decode(body));
        expect({ leg: leg.subject, body, code: (err as GeodeError).code }).toEqual({
          leg: leg.subject,
          body,
          code: ErrorCode.InvalidRequest,
        });
        expect((err as GeodeError).details["issues"]).toEqual(expect.any(Array));
      }
    }
  });

  it("every leg refuses a reply of the wrong shape as a malformed reply", () => {
    for (const leg of WIRE_LEGS) expect(isMalformedReply(thrown(() => leg.reply.decode("nope")))).toBe(true);
    expect(new Set(WIRE_LEGS.map((l) => l.subject)).size).toBe(WIRE_LEGS.length);
  });

  it("the handler leg: an envelope built by hookEnvelope decodes; a refused decision keeps its kind over the wire", () => {
    const env = hookEnvelope("Stop", correlation({ session_id: "s" }), { x: 1 }, "geode.public-hook.v1");
    expect(HookHandlerLeg.request.decode(env)).toEqual(env);
    expect(env.correlation).not.toHaveProperty("step_id");
    expect(HookHandlerLeg.reply.decode({ decision: null })).toEqual({ decision: null });
    const refused = invalidDecision("rewrite requires non-empty updates");
    const rebuilt = GeodeError.fromReply(refused.toReply());
    expect(isInvalidDecision(rebuilt)).toBe(true);
    expect(rebuilt.message).toBe("rewrite requires non-empty updates");
  });
});
