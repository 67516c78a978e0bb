import { ErrorCode, GeodeError } from "@geode/contracts";
import { useTestEnv } from "@geode/testing";
import { headers } from "@nats-io/transport-node";
import { describe, expect, it } from "vitest";
import { RuntimeEventBus } from "./event-bus.js";
import { type BusInterceptor, compose, type InterceptedConnection } from "./interceptors.js";
import { requestJson } from "./request.js";
import { serveRequests } from "./responder.js";

describe("compose", () => {
  it("runs the first interceptor outermost, skips those without the door, and is `last` when none has it", async () => {
    const seen: string[] = [];
    const layer = (name: string): BusInterceptor => ({
      async publish(input, next) {
        seen.push(`${name} in`);
        const stored = await next(input);
        seen.push(`${name} out`);
        return stored;
      },
    });
    const last = async () => {
      seen.push("last");
      return true;
    };
    const chain = compose([layer("a"), { serve: (i, next) => next(i) }, layer("b")], "publish", last);
    await chain({ subject: "s", id: "1", data: new Uint8Array(), headers: undefined as never });
    expect(seen).toEqual(["a in", "b in", "last", "b out", "a out"]);
    expect(compose([{ serve: (i, next) => next(i) }], "publish", last)).toBe(last);
  });
});

describe("interceptors at the bus's doors", () => {
  const env = useTestEnv();

  it("serve: see the subject, the handler's tags and its reply or throw, with before-reply work inside", async () => {
    const { names } = env();
    const nc = await env().connect();
    const seen: unknown[] = [];
    const bus: InterceptedConnection = {
      nc,
      interceptors: [
        {
          async serve(input, next) {
            try {
              const reply = await next(input);
              seen.push({ subject: input.subject, tags: { ...input.tags }, reply });
              return { ...(reply as object), wrapped: true };
            } catch (err) {
              seen.push({ subject: input.subject, error: (err as GeodeError).code, order: [...order] });
              throw err;
            }
          },
        },
      ],
    };
    const order: string[] = [];
    const subject = `${names.ns}.test.intercepted`;
    const responder = serveRequests(
      bus,
      subject,
      { beforeReply: () => order.push("before reply") },
      (body: unknown, _msg, tags) => {
        if ((body as { fail?: boolean }).fail) throw new GeodeError(ErrorCode.InvalidRequest, "no");
        tags["tool"] = "echo";
        return { ok: true };
      },
    );
    try {
      // A request on the bare connection runs no interceptor; the server door runs its own.
      await expect(requestJson(nc, subject, {}, { timeoutMs: 5_000 })).resolves.toEqual({
        ok: true,
        wrapped: true,
      });
      await expect(requestJson(nc, subject, { fail: true }, { timeoutMs: 5_000 })).rejects.toMatchObject({
        code: ErrorCode.InvalidRequest,
      });
      expect(seen).toEqual([
        { subject, tags: { tool: "echo" }, reply: { ok: true } },
        { subject, error: ErrorCode.InvalidRequest, order: ["before reply", "before reply"] },
      ]);
    } finally {
      await responder.drain();
    }
  });

  it("request: see the body before encoding and add headers the server receives; publish: add headers to every event", async () => {
    const { names, jsm } = env();
    const nc = await env().connect();
    const bodies: unknown[] = [];
    const results: boolean[] = [];
    const stamp: BusInterceptor = {
      request(input, next) {
        bodies.push(input.body);
        return next(input);
      },
    };
    const bus: InterceptedConnection = {
      nc,
      interceptors: [
        stamp,
        {
          request(input, next) {
            const h = input.options.headers ?? headers();
            h.set("x-stamp", "req");
            return next({ ...input, options: { ...input.options, headers: h } });
          },
          async publish(input, next) {
            input.headers.set("x-stamp", "event");
            const stored = await next(input);
            results.push(stored);
            return stored;
          },
        },
      ],
    };
    const subject = `${names.ns}.test.stamped`;
    const responder = serveRequests(nc, subject, {}, (_body, msg) => ({
      stamp: msg.headers?.get("x-stamp"),
    }));
    try {
      await expect(requestJson(bus, subject, { a: 1 }, { timeoutMs: 5_000 })).resolves.toEqual({
        stamp: "req",
      });
      expect(bodies).toEqual([{ a: 1 }]);
      // Passed in, not registered: the same connection without them runs none.
      await expect(requestJson(nc, subject, { b: 2 }, { timeoutMs: 5_000 })).resolves.toEqual({});
      expect(bodies).toEqual([{ a: 1 }]);
      const events = await RuntimeEventBus.create({ nc: bus, names, source: "test" });
      await events.emit("turn_completed", { rounds: 1 }, { session_id: "s1" });
      await events.flush();
      expect(results).toEqual([true]);
      const info = await jsm.streams.info(names.eventsStream);
      const stored = await jsm.streams.getMessage(names.eventsStream, { seq: info.state.last_seq });
      expect(stored?.header.get("x-stamp")).toBe("event");
    } finally {
      await responder.drain();
    }
  });
});
