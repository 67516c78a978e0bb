import { ensureResultStore } from "@geode/bus";
import { resultMetaSubject } from "@geode/contracts";
import { useTestEnv } from "@geode/testing";
import { describe, expect, it } from "vitest";
import { ResultRefError, ResultStore } from "./result-store.js";

const env = useTestEnv();

const text = (s: string) => new TextEncoder().encode(s);

async function store(): Promise<ResultStore> {
  await ensureResultStore(env().nc, env().names);
  return new ResultStore({ nc: env().nc, names: env().names });
}

async function refusal(p: Promise<unknown>): Promise<ResultRefError> {
  const err = await p.then(
    () => new Error("resolved"),
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ResultRefError);
  return err as ResultRefError;
}

describe("ResultStore", () => {
  it("keeps a result inline under the limit, else stores it in chunks and reads it back whole", async () => {
    const results = await store();
    const small = await results.offload(
      { a: 1 },
      { inlineBytes: 100, writer: "tool-executor", toolName: "t" },
    );
    expect(small).toEqual({ result: { a: 1 }, ref: null });
    const big = { text: "z".repeat(600_000) };
    const out = await results.offload(big, {
      inlineBytes: 100,
      writer: { tool: "fs.write" },
      toolName: "fs.write",
    });
    expect(out.ref).not.toBeNull();
    expect(out.result).toEqual(out.ref);
    expect(out.ref?.$ref).toMatch(/^fs\.write\/[0-9a-f-]{36}$/);
    const ref = out.ref ?? { $ref: "", bytes: 1, sha256: "" };
    expect(await results.get(ref, { writer: { tool: "fs.write" } })).toEqual(big);
    // Passing the same bytes through reuses the stored object.
    const again = await results.offload(big, {
      inlineBytes: 100,
      writer: "tool-executor",
      toolName: "fs.write",
      reuse: ref,
    });
    expect(again.ref).toBe(ref);
  });

  it("refuses another writer's object, a size or digest that differs, and a result larger than allowed", async () => {
    const results = await store();
    const ref = await results.putBytes(text(JSON.stringify({ n: "x".repeat(1_000) })), { tool: "a" }, "a");
    expect((await refusal(results.get(ref, { writer: { tool: "b" } }))).problem).toBe("foreign");
    expect((await refusal(results.get(ref, { writer: "tool-executor" }))).problem).toBe("foreign");
    expect((await refusal(results.get({ ...ref, sha256: "0".repeat(64) }))).problem).toBe("mismatch");
    expect((await refusal(results.get({ ...ref, bytes: ref.bytes - 1 }))).problem).toBe("mismatch");
    expect((await refusal(results.get(ref, { maxBytes: 10 }))).problem).toBe("too_large");
    expect((await refusal(results.get({ ...ref, $ref: "a/nothing-here" }))).problem).toBe("missing");
  });

  it("refuses metadata that points at a wildcard, a link, or what is not JSON", async () => {
    const results = await store();
    const { js, names } = env();
    const ref = await results.putBytes(text('{"ok":true}'), { tool: "a" }, "a");
    const forge = async (name: string, info: Record<string, unknown>) => {
      await js.publish(resultMetaSubject(names, name), JSON.stringify(info));
      return { ...ref, $ref: name };
    };
    const base = { bucket: names.resultStore, size: ref.bytes, chunks: 1, digest: "", name: "" };
    const wildcard = await forge("a/wild", { ...base, nuid: "tool.a.>" });
    expect((await refusal(results.get(wildcard))).problem).toBe("foreign");
    const link = await forge("a/link", {
      ...base,
      nuid: "tool.a.0123456789abcdef",
      options: { link: { bucket: "x" } },
    });
    expect((await refusal(results.get(link))).problem).toBe("foreign");
    const notJson = await results.putBytes(text("[1,2,3]"), { tool: "a" }, "a");
    expect((await refusal(results.get(notJson))).problem).toBe("invalid");
  });

  it("a reference whose object expired (or was purged) is missing, and has() says so", async () => {
    const results = await store();
    const ref = await results.putBytes(text('{"gone":"soon"}'), "tool-executor", "t");
    expect(await results.has(ref)).toBe(true);
    await env().jsm.streams.purge(env().names.resultStream);
    expect(await results.has(ref)).toBe(false);
    expect((await refusal(results.get(ref))).problem).toBe("missing");
  });
});
