import { ErrorCode, GeodeError } from "@geode/contracts";
import { useTestEnv } from "@geode/testing";
import { describe, expect, it } from "vitest";
import { encodeJson } from "./codec.js";
import { RequestFailedError, requestJson, requestMsg } from "./request.js";

describe("requestJson / requestMsg (shared reply inbox)", () => {
  const env = useTestEnv();

  it("matches each reply to its own request when many are in flight", async () => {
    const { nc, names } = env();
    const responder = await env().connect("responder");
    const subject = `${names.ns}.test.echo`;
    // Replies come back in reverse order, so a mix-up would show.
    const held: Array<() => void> = [];
    responder.subscribe(subject, {
      callback: (_err, m) => {
        held.push(() => {
          m.respond(m.data);
        });
        if (held.length === 20) for (const reply of held.reverse()) reply();
      },
    });
    await responder.flush();
    const replies = await Promise.all(
      Array.from({ length: 20 }, (_, i) => requestJson(nc, subject, { i }, { timeoutMs: 5_000 })),
    );
    expect(replies).toEqual(Array.from({ length: 20 }, (_, i) => ({ i })));
  });

  it("tells no responders from a timeout, and ignores a late reply", async () => {
    const { nc, names } = env();
    const nobody = requestMsg(nc, `${names.ns}.test.nobody`, encodeJson({}), { timeoutMs: 5_000 });
    await expect(nobody).rejects.toMatchObject({ failure: "no_responders", code: ErrorCode.Unavailable });

    const responder = await env().connect("slow");
    const subject = `${names.ns}.test.slow`;
    let late: (() => void) | undefined;
    responder.subscribe(subject, {
      callback: (_err, m) => {
        late = () => m.respond(encodeJson({ late: true }));
      },
    });
    await responder.flush();
    const err = await requestJson(nc, subject, {}, { timeoutMs: 50 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RequestFailedError);
    expect(err).toMatchObject({ failure: "timeout", message: "timed out after 50 ms" });
    late?.();
    await responder.flush();
    // The connection keeps working after the late reply arrives for a request nobody waits for.
    responder.subscribe(`${names.ns}.test.after`, {
      callback: (_e, m) => {
        m.respond(m.data);
      },
    });
    await responder.flush();
    expect(await requestJson(nc, `${names.ns}.test.after`, { ok: 1 }, { timeoutMs: 5_000 })).toEqual({
      ok: 1,
    });
  });

  it("rejects with the signal's reason on abort and rebuilds error replies as GeodeError", async () => {
    const { nc, names } = env();
    const responder = await env().connect("errors");
    responder.subscribe(`${names.ns}.test.never`, { callback: () => undefined });
    responder.subscribe(`${names.ns}.test.err`, {
      callback: (_e, m) => {
        m.respond(encodeJson(new GeodeError(ErrorCode.UnknownTool, "unknown tool: x").toReply()));
      },
    });
    await responder.flush();
    const ac = new AbortController();
    const pending = requestJson(nc, `${names.ns}.test.never`, {}, { timeoutMs: 5_000, signal: ac.signal });
    ac.abort(new Error("caller gave up"));
    await expect(pending).rejects.toThrow("caller gave up");
    const err = await requestJson(nc, `${names.ns}.test.err`, {}, { timeoutMs: 5_000 }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(GeodeError);
    expect(err).toMatchObject({ code: ErrorCode.UnknownTool, message: "unknown tool: x" });
  });
});
