import { createServer } from "node:http";
import { describe, expect, it } from "vitest";
import { ServiceMetrics } from "./metrics.js";
import { serveMetrics } from "./metrics-server.js";

describe("service metrics", () => {
  it("serves the metric names of docs/operations.md with their labels on /metrics, process defaults included", async () => {
    const m = new ServiceMetrics();
    m.hookInvocation("PreToolUse", "ok", 0.002);
    m.hookInvocation("PreToolUse", "ok", 0.004);
    m.hookInvocation("PreToolUse", "blocked", 0.001);
    m.handlerCall("PreToolUse", "guard", "block");
    m.toolCall("echo", "completed");
    m.receiptOutcome("indeterminate");
    m.verifyDecision("accept");
    m.approvalPending(1);
    m.approvalPending(1);
    m.approvalPending(-1);
    m.eventPublished();
    m.eventPublishFailed();
    m.recorderRows("activity_events", 3);
    m.recorderRows("session_events", 0);
    m.recorderBatch("GEODE_EVENTS", 0.01);
    m.natsConnected(true);
    m.setLagSource(async () => [{ stream: "GEODE_EVENTS", lag: 7 }]);
    const server = await serveMetrics(m, 0);
    try {
      expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
      const res = await fetch(server.url);
      expect(res.headers.get("content-type")).toMatch(/^text\/plain/);
      const text = await res.text();
      for (const line of [
        'geode_hook_invocations_total{hook="PreToolUse",status="ok"} 2',
        'geode_hook_invocations_total{hook="PreToolUse",status="blocked"} 1',
        'geode_hook_invocation_duration_seconds_count{hook="PreToolUse"} 3',
        'geode_handler_calls_total{hook="PreToolUse",handler="guard",status="block"} 1',
        'geode_tool_calls_total{tool="echo",status="completed"} 1',
        'geode_receipt_outcomes_total{outcome="indeterminate"} 1',
        'geode_verify_decisions_total{decision="accept"} 1',
        "geode_approvals_pending 1",
        "geode_events_published_total 1",
        "geode_event_publish_failures_total 1",
        'geode_recorder_rows_written_total{table="activity_events"} 3',
        'geode_recorder_batch_duration_seconds_count{stream="GEODE_EVENTS"} 1',
        'geode_recorder_lag_messages{stream="GEODE_EVENTS"} 7',
        "geode_nats_connected 1",
      ])
        expect(text).toContain(`${line}\n`);
      // No row inserted is no series: a table appears once something was written to it.
      expect(text).not.toContain('table="session_events"');
      expect(text).toMatch(/^process_cpu_user_seconds_total \d/m);
      expect(text).toMatch(/^nodejs_eventloop_lag_seconds \d/m);
      expect((await fetch(server.url.replace("/metrics", "/other"))).status).toBe(404);
    } finally {
      await server.close();
    }
  });

  it("reads exact totals at every scrape while updates are held between scrapes", async () => {
    const m = new ServiceMetrics({ defaults: false });
    const series = async (name: string) =>
      (await m.registry.metrics()).split("\n").find((l) => l.startsWith(name)) ?? "";
    // More observations than a label set holds before they go to prom-client on their own.
    for (let i = 0; i < 600; i++) m.hookInvocation("Stop", "ok", 0.002);
    for (let i = 0; i < 5; i++) m.handlerCall("Stop", "a", "ok");
    m.handlerCall("Stop", "b", "error");
    m.recorderRows("activity_events", 4);
    expect(await series('geode_hook_invocations_total{hook="Stop",status="ok"}')).toMatch(/ 600$/);
    expect(await series('geode_hook_invocation_duration_seconds_count{hook="Stop"}')).toMatch(/ 600$/);
    expect(await series('geode_hook_invocation_duration_seconds_sum{hook="Stop"}')).toMatch(/ 1\.2\d*$/);
    expect(await series('geode_handler_calls_total{hook="Stop",handler="a",status="ok"}')).toMatch(/ 5$/);
    expect(await series('geode_handler_calls_total{hook="Stop",handler="b",status="error"}')).toMatch(/ 1$/);
    // A second scrape adds only what came after the first: nothing is counted twice.
    m.hookInvocation("Stop", "ok", 0.002);
    m.recorderRows("activity_events", 3);
    m.eventPublished();
    expect(await series('geode_hook_invocations_total{hook="Stop",status="ok"}')).toMatch(/ 601$/);
    expect(await series('geode_hook_invocation_duration_seconds_count{hook="Stop"}')).toMatch(/ 601$/);
    expect(await series('geode_recorder_rows_written_total{table="activity_events"}')).toMatch(/ 7$/);
    expect(await series("geode_events_published_total")).toMatch(/ 1$/);
    expect(await series('geode_handler_calls_total{hook="Stop",handler="a",status="ok"}')).toMatch(/ 5$/);
  });

  it("refuses a port that is taken, so the caller can run on without metrics", async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    const port = (taken.address() as { port: number }).port;
    try {
      await expect(serveMetrics(new ServiceMetrics({ defaults: false }), port)).rejects.toMatchObject({
        code: "EADDRINUSE",
      });
    } finally {
      taken.close();
    }
  });
});

describe("geode_recorder_quarantined_total", () => {
  it("is exported at 0 once a stream is named, then counts its quarantined messages", async () => {
    const m = new ServiceMetrics({ defaults: false });
    m.recorderQuarantined("GEODE_EVENTS", 0);
    expect(await m.registry.metrics()).toContain('geode_recorder_quarantined_total{stream="GEODE_EVENTS"} 0');
    m.recorderQuarantined("GEODE_EVENTS", 2);
    expect(await m.registry.metrics()).toContain('geode_recorder_quarantined_total{stream="GEODE_EVENTS"} 2');
  });
});
