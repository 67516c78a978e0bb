import { readdirSync, readFileSync } from "node:fs";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { getPriority } from "node:os";
import type { GeodeConnection } from "@geode/bus";
import { HookName, type TraceContext } from "@geode/contracts";
import { createHookClient } from "@geode/runtime";
import { type ServedHook, serveHook } from "@geode/sdk";
import { currentTrace, newTraceContext, runInTrace, tracePropagation } from "@geode/telemetry";
import { type SpawnedProcess, spawnService, useTestEnv, waitFor } from "@geode/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ExportedSpan, startOtlpCollector } from "./otlp-support.js";

const env = useTestEnv();
const spans: ExportedSpan[] = [];
let collector: Server;
let endpoint: string;
let handler: ServedHook;
/** The test's connection with the trace context, as `connectGeode` of the SDK and the runtime gives it. */
let conn: GeodeConnection;
/** The trace context the handler ran in, per call (what its request's `traceparent` said). */
const handlerSaw: TraceContext[] = [];
/** The same, by the session id of the call's correlation (the last call of each session). */
const handlerSawBySession = new Map<string, TraceContext>();

beforeAll(async () => {
  collector = await startOtlpCollector(spans);
  endpoint = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`;
  const { nc, names } = env();
  // The handler and the caller share this connection.
  conn = { nc, names, interceptors: tracePropagation() };
  handler = await serveHook(conn, HookName.UserPromptSubmit, { name: "traced" }, (envelope) => {
    const seen = currentTrace();
    if (seen) {
      handlerSaw.push(seen);
      handlerSawBySession.set(envelope.correlation.session_id, seen);
    }
    return { action: "continue" };
  });
});

afterAll(async () => {
  await handler?.close();
  await new Promise((resolve) => collector?.close(resolve));
});

/** Starts a dispatcher process exporting to the collector; `extra` adds to its environment. */
async function startDispatcher(extra: Record<string, string> = {}): Promise<SpawnedProcess> {
  const proc = spawnService("services/hook-dispatcher/src/main.ts", {
    ...env().env,
    LOG_LEVEL: "info",
    OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
    // empty reads as unset: the default protocol, whatever the environment running the tests says
    OTEL_EXPORTER_OTLP_PROTOCOL: "",
    OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "",
    ...extra,
  });
  await proc.waitForOutput(/hook-dispatcher started/);
  return proc;
}

/** Invokes UserPromptSubmit in a new sampled trace until the dispatcher knows the handler. */
async function tracedCall(): Promise<{ trace: TraceContext; before: number; after: number }> {
  const hooks = createHookClient(conn, conn.names);
  let trace = newTraceContext(() => true);
  let before = 0;
  await waitFor(async () => {
    trace = newTraceContext(() => true);
    before = Date.now();
    const out = await runInTrace(trace, () => hooks.invoke(HookName.UserPromptSubmit, { user_input: "hi" }));
    return out.decision_sources.includes("traced");
  });
  return { trace, before, after: Date.now() };
}

const ofTrace = (traceId: string) => spans.filter((s) => s.traceId === traceId);

/**
 * The invocation's span and its handler call's span as exported for `trace`, once both arrived;
 * checks the invocation's span (a child of the caller's, in `contentType`).
 */
async function exportedInvocation(
  trace: TraceContext,
  contentType: string,
): Promise<{ invoke: ExportedSpan | undefined; call: ExportedSpan | undefined }> {
  await waitFor(async () => ofTrace(trace.traceId).length >= 2);
  const invoke = ofTrace(trace.traceId).find((s) => s.name === "geode.hook.invoke");
  expect(invoke).toMatchObject({
    contentType,
    service: "hook-dispatcher",
    parentSpanId: trace.spanId,
    attributes: { "geode.hook": "UserPromptSubmit" },
  });
  return { invoke, call: ofTrace(trace.traceId).find((s) => s.name === "geode.hook.handler") };
}

/** The nice value of thread `tid` of process `pid` (Linux `/proc`). */
function niceOf(pid: number, tid: number | string): number {
  const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8");
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[16]);
}

describe("span export over OTLP/HTTP from a service process", () => {
  it("exports the request's spans while the service runs, with the ids its messages carried", async () => {
    const proc = await startDispatcher();
    try {
      const { trace, before, after } = await tracedCall();
      // protobuf unless OTEL_EXPORTER_OTLP_PROTOCOL says otherwise, as OpenTelemetry's default
      const { invoke, call } = await exportedInvocation(trace, "application/x-protobuf");
      expect(call).toMatchObject({
        service: "hook-dispatcher",
        parentSpanId: invoke?.spanId,
        attributes: { "geode.hook": "UserPromptSubmit", "geode.handler": "traced" },
      });
      // The handler's request carried the id of the exported handler-call span as its parent.
      expect(handlerSaw.map((t) => t.spanId)).toContain(call?.spanId);
      expect(handlerSaw.find((t) => t.spanId === call?.spanId)?.traceId).toBe(trace.traceId);
      // Timed by the wall clock of the call (the thread that exports is not the one that timed it).
      for (const s of [invoke!, call!]) {
        expect(s.startMs).toBeGreaterThanOrEqual(before - 5);
        expect(s.endMs).toBeLessThanOrEqual(after + 5);
        expect(s.endMs).toBeGreaterThanOrEqual(s.startMs);
      }
      expect(invoke!.startMs).toBeLessThanOrEqual(call!.startMs);
      expect(invoke!.endMs).toBeGreaterThanOrEqual(call!.endMs);
      // The span thread yields the cores: one thread at nice 10, the process's own thread at the
      // nice it was started with (this test's own: a CI runner may run everything niced).
      const pid = proc.child.pid!;
      const nices = readdirSync(`/proc/${pid}/task`).map((tid) => niceOf(pid, tid));
      expect(nices.filter((n) => n === 10)).toHaveLength(1);
      expect(niceOf(pid, pid)).toBe(getPriority());
    } finally {
      expect(await proc.stop("SIGTERM")).toBe(0);
    }
  });

  it("starts the trace of a request without traceparent and exports its root span from the span thread", async () => {
    const proc = await startDispatcher();
    try {
      await tracedCall(); // the dispatcher knows the handler
      const reply = await env().nc.request(
        env().names.hookInvoke(HookName.UserPromptSubmit),
        JSON.stringify({ payload: { user_input: "x" }, correlation: { session_id: "no-traceparent" } }),
        { timeout: 5_000 },
      );
      expect(reply.json<{ decision_sources?: string[] }>().decision_sources).toContain("traced");
      // The handler's request carried the trace the dispatcher started, under its invoke span.
      // Found by the request's session, not by position: an earlier call's late delivery cannot pass for it.
      const started = handlerSawBySession.get("no-traceparent");
      expect(started?.flags).toBe("01");
      await waitFor(async () => ofTrace(started!.traceId).length >= 2);
      const invoke = ofTrace(started!.traceId).find((s) => s.name === "geode.hook.invoke");
      const call = ofTrace(started!.traceId).find((s) => s.name === "geode.hook.handler");
      expect(invoke).toMatchObject({ service: "hook-dispatcher", parentSpanId: "" });
      expect(call).toMatchObject({ parentSpanId: invoke?.spanId, attributes: { "geode.handler": "traced" } });
      expect(started?.spanId).toBe(call?.spanId);
    } finally {
      expect(await proc.stop("SIGTERM")).toBe(0);
    }
  });

  it("exports as OTLP/JSON when OTEL_EXPORTER_OTLP_PROTOCOL says http/json", async () => {
    const proc = await startDispatcher({ OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" });
    try {
      const { trace } = await tracedCall();
      const { invoke, call } = await exportedInvocation(trace, "application/json");
      expect(call).toMatchObject({ contentType: "application/json", parentSpanId: invoke?.spanId });
    } finally {
      expect(await proc.stop("SIGTERM")).toBe(0);
    }
  });

  it("refuses to start with an OTLP protocol it cannot send, naming the variable", async () => {
    const proc = spawnService("services/hook-dispatcher/src/main.ts", {
      ...env().env,
      OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "grpc",
    });
    expect(await proc.exited).toBe(2);
    const refusal =
      /OTEL_EXPORTER_OTLP_TRACES_PROTOCOL must be one of http\/protobuf, http\/json, got "grpc"/;
    await waitFor(async () => refusal.test(proc.output()), 5_000).catch(() => undefined);
    expect(proc.output()).toMatch(refusal);
  });

  it("exports what it still holds when it stops", async () => {
    // Nothing leaves on its own within the test: only the stop's flush can send these spans.
    const proc = await startDispatcher({ OTEL_BSP_SCHEDULE_DELAY: "600000" });
    let trace: TraceContext;
    try {
      ({ trace } = await tracedCall());
    } finally {
      expect(await proc.stop("SIGTERM")).toBe(0);
    }
    const names = ofTrace(trace.traceId).map((s) => s.name);
    expect(names).toContain("geode.hook.invoke");
    expect(names).toContain("geode.hook.handler");
  });
});
