import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { type ActivityRecorder, startActivityRecorder } from "@geode/activity-recorder";
import type { GeodeConnection } from "@geode/bus";
import { HookName, parseTraceparent, TRACEPARENT_HEADER, type TraceContext } from "@geode/contracts";
import { type HookDispatcher, startHookDispatcher } from "@geode/hook-dispatcher";
import { openProjectionDb, type ProjectionDb } from "@geode/projection";
import { createHookClient } from "@geode/runtime";
import { serveHook } from "@geode/sdk";
import {
  currentTrace,
  newTraceContext,
  runInTrace,
  telemetryInterceptors,
  traceSamplerFromEnv,
} from "@geode/telemetry";
import { flushSpans, setTracer } from "@geode/telemetry/internal";
import { useTestEnv, waitFor } from "@geode/testing";
import { resourceFromAttributes } from "@opentelemetry/resources";
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const env = useTestEnv();
const exporter = new InMemorySpanExporter();
// As startTracing sets it up: spans under a request's trace are noted and made in a batch, handed
// to the provider's processor with its resource and its tracer's scope.
const resource = resourceFromAttributes({ "service.name": "observability-trace-test" });
const processor = new SimpleSpanProcessor(exporter);
const provider = new BasicTracerProvider({ resource, spanProcessors: [processor] });
const scope = { name: "test" };
let dispatcher: HookDispatcher;
let recorder: ActivityRecorder;
let db: ProjectionDb;
let runsDir: string;
/** The test's connection with a service's interceptors, as `runService` hands them to a service. */
let bus: GeodeConnection;

beforeAll(async () => {
  const { nc, names, ns, databaseUrl } = env();
  // As runService passes them in: the dispatcher, the handlers and the caller share this connection.
  bus = { nc, names, interceptors: telemetryInterceptors(names) };
  setTracer(provider.getTracer(scope.name), { target: { processor, resource, scope } });
  runsDir = mkdtempSync(path.join(tmpdir(), "geode-trace-"));
  db = await openProjectionDb({ ns, databaseUrl });
  recorder = await startActivityRecorder({ nc, names, db, runsDir });
  dispatcher = await startHookDispatcher({ nc: bus, names });
});
afterAll(async () => {
  setTracer(undefined);
  await dispatcher?.stop();
  await recorder?.stop();
  await db?.close();
  if (runsDir) rmSync(runsDir, { recursive: true, force: true });
});

/** The `traceparent` trace ids of the `extension_invoked` events of one session, in stream order. */
async function eventTraceIds(session: string): Promise<string[]> {
  const { jsm, names } = env();
  const info = await jsm.streams.info(names.eventsStream);
  const ids: string[] = [];
  for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
    const m = await jsm.streams.getMessage(names.eventsStream, { seq }).catch(() => null);
    if (!m) continue;
    const body = m.json<{ event: string; correlation: { session_id: string } }>();
    if (body.event !== "extension_invoked" || body.correlation.session_id !== session) continue;
    ids.push(parseTraceparent(m.header.get(TRACEPARENT_HEADER))?.traceId ?? "none");
  }
  return ids;
}

/** The `trace_id` of each `extension_invocations` row of one session. */
async function invocationTraceIds(session: string): Promise<Array<string | null>> {
  const rows = await db.db
    .selectFrom("extension_invocations")
    .select("trace_id")
    .where("session_id", "=", session)
    .execute();
  return rows.map((r) => r.trace_id);
}

describe("W3C trace context across the plane", () => {
  it("one trace covers caller → dispatcher → two handlers → events → projection rows", async () => {
    const { names } = env();
    const seen: Array<TraceContext | undefined> = [];
    const handlers = await Promise.all(
      ["first", "second"].map((name, i) =>
        serveHook(bus, HookName.UserPromptSubmit, { name, priority: i }, () => {
          seen.push(currentTrace());
          return null;
        }),
      ),
    );
    try {
      const hooks = createHookClient(bus, names);
      await waitFor(() => dispatcher.handlers().length === 2, 10_000);
      // The caller's own context: a trace it already has.
      const caller = parseTraceparent(
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "vendor=opaque",
      ) as TraceContext;
      exporter.reset();
      const outcome = await runInTrace(caller, () =>
        hooks.invoke(HookName.UserPromptSubmit, { user_input: "hi" }, { session_id: "trace-1" }),
      );
      expect(outcome.decision_sources).toEqual([]);

      // Spans: the invocation is a child of the caller's span, each handler call a child of it.
      flushSpans();
      const spans = exporter.getFinishedSpans();
      const invoke = spans.find((s) => s.name === "geode.hook.invoke");
      const calls = spans.filter((s) => s.name === "geode.hook.handler");
      expect(invoke?.spanContext().traceId).toBe(caller.traceId);
      expect(invoke?.parentSpanContext?.spanId).toBe(caller.spanId);
      expect(invoke?.attributes["geode.hook"]).toBe("UserPromptSubmit");
      expect(calls.map((s) => s.attributes["geode.handler"])).toEqual(["first", "second"]);
      for (const c of calls) {
        expect(c.spanContext().traceId).toBe(caller.traceId);
        expect(c.parentSpanContext?.spanId).toBe(invoke?.spanContext().spanId);
      }
      // Each handler ran in the trace, its parent being its own handler-call span; tracestate kept.
      expect(seen.map((t) => t?.traceId)).toEqual([caller.traceId, caller.traceId]);
      expect(seen.map((t) => t?.spanId)).toEqual(calls.map((c) => c.spanContext().spanId));
      expect(seen.map((t) => t?.state)).toEqual(["vendor=opaque", "vendor=opaque"]);

      // The audit events carry it as a header, and the recorder stores it with both rows.
      await waitFor(async () => (await eventTraceIds("trace-1")).length === 2, 10_000);
      expect(await eventTraceIds("trace-1")).toEqual([caller.traceId, caller.traceId]);
      await waitFor(async () => (await invocationTraceIds("trace-1")).length === 2, 15_000);
      const audit = await db.db
        .selectFrom("extension_invocations")
        .select(["extension", "trace_id"])
        .where("session_id", "=", "trace-1")
        .orderBy("stream_seq")
        .execute();
      expect(audit).toEqual([
        { extension: "first", trace_id: caller.traceId },
        { extension: "second", trace_id: caller.traceId },
      ]);
      const activity = await db.db
        .selectFrom("activity_events")
        .select("trace_id")
        .where("session_id", "=", "trace-1")
        .execute();
      expect(activity.map((r) => r.trace_id)).toEqual([caller.traceId, caller.traceId]);

      // A caller without a trace: the client starts one, and the whole invocation shares it.
      exporter.reset();
      await hooks.invoke(HookName.UserPromptSubmit, { user_input: "again" }, { session_id: "trace-2" });
      await waitFor(async () => (await eventTraceIds("trace-2")).length === 2, 10_000);
      const fresh = await eventTraceIds("trace-2");
      expect(fresh[0]).toMatch(/^[0-9a-f]{32}$/);
      expect(fresh[0]).not.toBe(caller.traceId);
      expect(fresh[1]).toBe(fresh[0]);
      flushSpans();
      const invoke2 = exporter.getFinishedSpans().find((s) => s.name === "geode.hook.invoke");
      expect(invoke2?.spanContext().traceId).toBe(fresh[0]);
    } finally {
      await Promise.all(handlers.map((h) => h.close()));
    }
  });

  it("a trace its starter did not sample travels to every message and row but records no span", async () => {
    const { names } = env();
    const seen: Array<TraceContext | undefined> = [];
    const handler = await serveHook(bus, HookName.UserPromptSubmit, { name: "only" }, () => {
      seen.push(currentTrace());
      return null;
    });
    try {
      const hooks = createHookClient(bus, names);
      // Only this handler: the previous test's two must be gone from the dispatcher's registry too.
      await waitFor(
        () =>
          dispatcher
            .handlers()
            .map((h) => h.name)
            .join() === "only",
        10_000,
      );
      // As a runtime with OTEL_TRACES_SAMPLER=always_off starts its traces.
      const unsampled = newTraceContext(traceSamplerFromEnv({ OTEL_TRACES_SAMPLER: "always_off" }));
      exporter.reset();
      await runInTrace(unsampled, () =>
        hooks.invoke(HookName.UserPromptSubmit, { user_input: "quiet" }, { session_id: "trace-4" }),
      );
      flushSpans();
      expect(exporter.getFinishedSpans()).toEqual([]);
      expect(seen.map((t) => [t?.traceId, t?.flags])).toEqual([[unsampled.traceId, "00"]]);
      await waitFor(async () => (await eventTraceIds("trace-4")).length === 1, 10_000);
      expect(await eventTraceIds("trace-4")).toEqual([unsampled.traceId]);
      await waitFor(async () => (await invocationTraceIds("trace-4")).length === 1, 15_000);
      expect(await invocationTraceIds("trace-4")).toEqual([unsampled.traceId]);
    } finally {
      await handler.close();
    }
  });

  it("a bad traceparent starts a new trace instead of failing the request", async () => {
    const { nc, names } = env();
    const { headers } = await import("@nats-io/transport-node");
    const h = headers();
    h.set(TRACEPARENT_HEADER, "00-00000000000000000000000000000000-00f067aa0ba902b7-01");
    exporter.reset();
    const reply = await nc.request(
      names.hookInvoke(HookName.UserPromptSubmit),
      JSON.stringify({ payload: { user_input: "x" }, correlation: { session_id: "trace-3" } }),
      { timeout: 5_000, headers: h },
    );
    expect(reply.json<{ name?: string }>().name).toBe("UserPromptSubmit");
    flushSpans();
    const invoke = exporter.getFinishedSpans().find((s) => s.name === "geode.hook.invoke");
    expect(invoke?.spanContext().traceId).toMatch(/^(?!0{32})[0-9a-f]{32}$/);
    expect(invoke?.parentSpanContext).toBeUndefined();
  });
});
