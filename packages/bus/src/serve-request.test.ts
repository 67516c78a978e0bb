import {
  ErrorCode,
  ErrorKind,
  GeodeError,
  HookHandlerLeg,
  isMalformedReply,
  MAX_JSON_DEPTH,
  PROBE_HEADER,
  ToolExecuteLeg,
} from "@geode/contracts";
import { useTestEnv } from "@geode/testing";
import { JetStreamApiError } from "@nats-io/jetstream";
import { headers, NoRespondersError, TimeoutError } from "@nats-io/transport-node";
import { describe, expect, it } from "vitest";
import { decodeJson, encodeJson, jsonDepth } from "./codec.js";
import { requestJson } from "./request.js";
import { replyError, serveRequests } from "./responder.js";

const text = (s: string) => new TextEncoder().encode(s);

describe("jsonDepth and decodeJson", () => {
  it("counts nesting without recursion, ignoring brackets inside strings", () => {
    expect(jsonDepth(text('{"a":[1,{"b":"[[[{{{"}]}'))).toBe(3);
    expect(jsonDepth(text('"\\"[[["'))).toBe(0);
    expect(jsonDepth(text("[".repeat(100_000)))).toBe(100_000);
  });

  it("refuses a body nested deeper than MAX_JSON_DEPTH before parsing it", () => {
    const ok = `${"[".repeat(MAX_JSON_DEPTH)}${"]".repeat(MAX_JSON_DEPTH)}`;
    expect(jsonDepth(text(ok))).toBe(MAX_JSON_DEPTH);
    expect(() => decodeJson(text(ok))).not.toThrow();
    const deep = `[${ok}]`;
    expect(() => decodeJson(text(deep))).toThrow(/nests deeper than 128 levels/);
    const err = (() => {
      try {
        decodeJson(text(deep));
      } catch (e) {
        return e;
      }
    })();
    expect((err as GeodeError).code).toBe(ErrorCode.InvalidRequest);
  });
});

describe("serveRequests / requestJson (the bus's one serve/request pair)", () => {
  const env = useTestEnv();

  it("checks a request with the leg's codec before the handler, and replies with a coded error", async () => {
    const { nc, names } = env();
    const subject = `${names.ns}.test.leg`;
    const seen: unknown[] = [];
    const responder = serveRequests(nc, subject, { request: ToolExecuteLeg.request }, (req) => {
      seen.push(req);
      return { ok: true };
    });
    try {
      const bad = await requestJson(nc, subject, ["not", "a", "request"], { timeoutMs: 5_000 }).catch(
        (e: unknown) => e,
      );
      expect(bad).toBeInstanceOf(GeodeError);
      expect((bad as GeodeError).code).toBe(ErrorCode.InvalidRequest);
      expect(seen).toEqual([]);
      const good = await requestJson(nc, subject, { tool_name: "echo", arguments: {} }, { timeoutMs: 5_000 });
      expect(good).toEqual({ ok: true });
      expect(seen).toHaveLength(1);
    } finally {
      await responder.drain();
    }
  });

  it("answers a probe itself, and a reply of the wrong shape is a malformed reply", async () => {
    const { nc, names } = env();
    const subject = `${names.ns}.test.handler`;
    let calls = 0;
    const responder = serveRequests(nc, subject, {}, () => {
      calls++;
      return { verdict: "yes" };
    });
    try {
      const h = headers();
      h.set(PROBE_HEADER, "1");
      expect(await requestJson(nc, subject, {}, { timeoutMs: 5_000, headers: h })).toEqual({ probe: "ok" });
      expect(calls).toBe(0);
      const err = await requestJson(nc, subject, {}, { timeoutMs: 5_000, reply: HookHandlerLeg.reply }).catch(
        (e: unknown) => e,
      );
      expect(isMalformedReply(err)).toBe(true);
      expect((err as Error).message).toBe("reply must be an object with a decision");
    } finally {
      await responder.drain();
    }
  });

  it("a reply over the server's max_payload is answered at once with a coded error, not dropped", async () => {
    const { nc, names } = env();
    const subject = `${names.ns}.test.huge`;
    const maxPayload = nc.info?.max_payload ?? 0;
    expect(maxPayload).toBeGreaterThan(0);
    let calls = 0;
    const responder = serveRequests(nc, subject, {}, (req) => {
      calls++;
      return (req as { small?: boolean }).small ? { ok: true } : { blob: "x".repeat(maxPayload + 1) };
    });
    try {
      const started = performance.now();
      const err = await requestJson(nc, subject, {}, { timeoutMs: 20_000 }).catch((e: unknown) => e);
      expect(performance.now() - started).toBeLessThan(2_000);
      expect(err).toBeInstanceOf(GeodeError);
      expect((err as GeodeError).code).toBe(ErrorCode.Internal);
      expect((err as GeodeError).details).toEqual({
        kind: ErrorKind.ReplyTooLarge,
        bytes: maxPayload + 12,
        max_payload: maxPayload,
      });
      expect((err as Error).message).toBe(
        `reply of ${maxPayload + 12} bytes exceeds the NATS max_payload of ${maxPayload} bytes`,
      );
      // The responder keeps serving.
      expect(await requestJson(nc, subject, { small: true }, { timeoutMs: 5_000 })).toEqual({ ok: true });
      expect(calls).toBe(2);
    } finally {
      await responder.drain();
    }
  });

  it("a reply that is not JSON is a malformed reply, not the caller's invalid request", async () => {
    const { nc, names } = env();
    const subject = `${names.ns}.test.garbage`;
    const sub = nc.subscribe(subject, {
      callback: (_e, m) => {
        m.respond(text("{nope"));
      },
    });
    try {
      const err = await requestJson(nc, subject, {}, { timeoutMs: 5_000 }).catch((e: unknown) => e);
      expect(isMalformedReply(err)).toBe(true);
      expect((err as GeodeError).code).toBe(ErrorCode.Internal);
      expect((err as Error).message).toBe("reply is not valid JSON");
    } finally {
      sub.unsubscribe();
    }
    expect(encodeJson({ a: 1 })).toEqual(text('{"a":1}'));
  });
});

describe("replyError", () => {
  it("answers a NATS failure under the handler as unavailable, anything untyped as internal", () => {
    expect(replyError(new TimeoutError()).code).toBe(ErrorCode.Unavailable);
    expect(replyError(new TimeoutError()).message).toBe("NATS unavailable: timeout");
    expect(replyError(new NoRespondersError("$JS.API.STREAM.INFO.X")).code).toBe(ErrorCode.Unavailable);
    const leaderless = new JetStreamApiError({
      code: 503,
      err_code: 10008,
      description: "JetStream system temporarily unavailable",
    });
    expect(replyError(leaderless).code).toBe(ErrorCode.Unavailable);
    // A JetStream answer that is not about availability stays internal, and typed errors keep their code.
    const conflict = new JetStreamApiError({
      code: 400,
      err_code: 10071,
      description: "wrong last sequence: 3",
    });
    expect(replyError(conflict).code).toBe(ErrorCode.Internal);
    expect(replyError(new Error("boom")).code).toBe(ErrorCode.Internal);
    expect(replyError(new GeodeError(ErrorCode.Timeout, "late")).code).toBe(ErrorCode.Timeout);
  });
});
