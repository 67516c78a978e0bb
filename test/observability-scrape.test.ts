import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { HealthReplySchema, HookName, SERVICE_NAMES } from "@geode/contracts";
import { createHookClient, createToolClient, createVerifyClient } from "@geode/runtime";
import { serveHook } from "@geode/sdk";
import {
  REPO_ROOT,
  type SpawnedProcess,
  spawnProgram,
  spawnService,
  useTestEnv,
  waitFor,
} from "@geode/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/** Whether `port` can be bound on loopback right now. */
function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once("error", () => resolve(false));
    s.listen(port, "127.0.0.1", () => s.close(() => resolve(true)));
  });
}

/**
 * `count` consecutive free loopback ports (what `geode up` needs from GEODE_METRICS_PORT): other
 * test files and worktrees run at the same time, so never a fixed one.
 */
async function freePortRun(count: number): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const first = 20_000 + Math.floor(Math.random() * 40_000);
    let ok = true;
    for (let i = 0; i < count && ok; i++) ok = await portFree(first + i);
    if (ok) return first;
  }
  throw new Error(`no ${count} consecutive free ports found`);
}

interface PromSample {
  metric: Record<string, string>;
  value: [number, string];
}

const env = useTestEnv();
const SERVICES = [...SERVICE_NAMES];
let dir: string;
let up: SpawnedProcess;
let prometheus: SpawnedProcess;
let firstPort: number;
let promUrl: string;

/** One instant query against the running Prometheus's HTTP API. */
async function query(q: string): Promise<PromSample[]> {
  const res = await fetch(`${promUrl}/api/v1/query?query=${encodeURIComponent(q)}`);
  const body = (await res.json()) as { status: string; data: { result: PromSample[] }; error?: string };
  if (body.status !== "success") throw new Error(`query ${q}: ${body.error}`);
  return body.data.result;
}

/**
 * Waits until `q` has `min` samples whose value passes `ok` (Prometheus scrapes every second;
 * the targets' first scrapes are spread over that second).
 */
async function until(q: string, ok: (v: number) => boolean = (v) => v > 0, min = 1): Promise<PromSample[]> {
  let last: PromSample[] = [];
  try {
    await waitFor(
      async () => {
        last = await query(q);
        return last.filter((s) => ok(Number(s.value[1]))).length >= min;
      },
      60_000,
      500,
    );
    return last;
  } catch {
    throw new Error(`no sample of ${q} as expected; last: ${JSON.stringify(last)}`);
  }
}

beforeAll(async () => {
  // Debian's prometheus (.ci/run installs it); without it the readiness wait below would only time out.
  if (spawnSync("prometheus", ["--version"]).error)
    throw new Error("prometheus is missing: apt-get install prometheus (.ci/run does)");
  dir = mkdtempSync(path.join(tmpdir(), "geode-scrape-"));
  firstPort = await freePortRun(SERVICES.length);
  up = spawnService(
    "packages/cli/src/main.ts",
    {
      ...env().env,
      GEODE_METRICS_PORT: String(firstPort),
      GEODE_GATEWAY_ADDR: "127.0.0.1:0",
      GEODE_RUNS_DIR: path.join(dir, "runs"),
      GEODE_TOOL_ROOT: path.join(dir, "files"),
      LOG_LEVEL: "warn",
    },
    ["up"],
  );
  await up.waitForOutput(/geode up: ready/, 150_000);
  const promPort = await freePortRun(1);
  promUrl = `http://127.0.0.1:${promPort}`;
  const targets = SERVICES.map((_, i) => `"127.0.0.1:${firstPort + i}"`).join(", ");
  writeFileSync(
    path.join(dir, "prometheus.yml"),
    [
      "global: { scrape_interval: 1s, evaluation_interval: 1s }",
      `rule_files: ["${path.join(REPO_ROOT, "infra/observability/alerts.yml")}"]`,
      "scrape_configs:",
      "  - job_name: geode",
      `    static_configs: [{ targets: [${targets}] }]`,
      "",
    ].join("\n"),
  );
  prometheus = spawnProgram(
    "prometheus",
    [
      `--config.file=${path.join(dir, "prometheus.yml")}`,
      `--storage.tsdb.path=${path.join(dir, "tsdb")}`,
      `--web.listen-address=127.0.0.1:${promPort}`,
    ],
    {},
  );
  await waitFor(async () => (await fetch(`${promUrl}/-/ready`).catch(() => null))?.ok, 60_000, 250);
}, 240_000);

afterAll(async () => {
  await prometheus?.stop("SIGTERM");
  await up?.stop("SIGINT", 30_000);
  if (dir) rmSync(dir, { recursive: true, force: true });
}, 60_000);

describe("Prometheus scraping the running services (geode up)", () => {
  it("geode up prints each service's metrics URL on consecutive ports, and health says the same", async () => {
    const { nc, names } = env();
    for (const [i, s] of SERVICES.entries()) {
      const url = `http://127.0.0.1:${firstPort + i}/metrics`;
      expect(up.output()).toMatch(
        new RegExp(`^${s}\\s+ok\\s+\\S+\\s+\\d+\\s+${url.replace(/\./g, "\\.")}`, "m"),
      );
      const health = HealthReplySchema.parse(
        (await nc.request(names.health(s), "", { timeout: 5_000 })).json(),
      );
      expect(health.metrics_url).toBe(url);
    }
  });

  it("finds every series after a short load: hooks, handlers, tools, receipts, verifier, events, recorder, NATS", async () => {
    const { nc, names, ns } = env();
    const conn = { nc, names };
    const guard = await serveHook(conn, HookName.PreToolUse, { name: "obs-guard" }, (e) =>
      e.payload["tool_name"] === "fs.write"
        ? null
        : { action: "block", reason: "read tools only in this test" },
    );
    try {
      const hooks = createHookClient(nc, names);
      // The dispatcher learns of the handler through its KV watch.
      await waitFor(
        async () =>
          (await hooks.invoke(HookName.PreToolUse, { tool_name: "echo", arguments: {} })).decision_sources
            .length > 0,
        30_000,
        100,
      );
      for (let i = 0; i < 10; i++)
        await hooks.invoke(HookName.UserPromptSubmit, { user_input: `hello ${i}` }, { session_id: "obs-1" });
      const tools = createToolClient(conn);
      for (let i = 0; i < 3; i++) {
        const reply = await tools.execute({
          tool_name: "fs.write",
          arguments: { path: `note-${i}.txt`, content: "x" },
          correlation: { session_id: "obs-1", tool_call_id: `call-${i}` },
        });
        expect(reply.status).toBe("completed");
      }
      expect((await tools.execute({ tool_name: "echo", arguments: {}, correlation: {} })).status).toBe(
        "blocked",
      );
      const verify = createVerifyClient(conn);
      const verdict = await verify.finalize({
        correlation: { session_id: "obs-2", turn_id: "t-1" },
        candidate: {
          text: "The answer is 42.",
          termination_reason: "natural",
          rounds: 1,
          tool_call_count: 0,
        },
      });
      expect(verdict.policy_action).toBe("accept");
    } finally {
      await guard.close();
    }

    // Every service is scraped and connected to NATS, with the process defaults.
    const all = SERVICES.length;
    expect(await until('up{job="geode"}', (v) => v === 1, all)).toHaveLength(all);
    expect(await until("geode_nats_connected", (v) => v === 1, all)).toHaveLength(all);
    expect(await until("process_resident_memory_bytes", (v) => v > 0, all)).toHaveLength(all);

    await until('geode_hook_invocations_total{hook="UserPromptSubmit",status="ok"}', (v) => v >= 10);
    await until('geode_hook_invocations_total{hook="PreToolUse",status="blocked"}');
    await until('sum(geode_hook_invocation_duration_seconds_bucket{hook="PreToolUse",le="+Inf"})');
    await until('geode_handler_calls_total{hook="PreToolUse",handler="obs-guard",status="block"}');
    await until(
      'geode_handler_calls_total{hook="PreToolUse",handler="obs-guard",status="ok"}',
      (v) => v >= 3,
    );
    await until('geode_tool_calls_total{tool="fs.write",status="completed"}', (v) => v === 3);
    await until('geode_tool_calls_total{tool="echo",status="blocked"}');
    await until('geode_receipt_outcomes_total{outcome="completed"}', (v) => v === 3);
    await until('geode_verify_decisions_total{decision="accept"}');
    await until("geode_approvals_pending", (v) => v === 0);
    await until("sum(geode_events_published_total)");
    await until("sum(geode_event_publish_failures_total)", (v) => v === 0);
    await until('geode_recorder_rows_written_total{table="activity_events"}');
    await until('geode_recorder_rows_written_total{table="extension_invocations"}');
    await until('sum(geode_recorder_batch_duration_seconds_count{stream=~".+"})');
    // Caught up once the load is written: the lag of both streams falls back to 0.
    const lag = await until(`geode_recorder_lag_messages{stream=~"${ns.toUpperCase()}_.+"}`, (v) => v === 0);
    expect(lag.map((s) => s.metric["stream"]).sort()).toEqual(
      [names.eventsStream, names.timelineStream].sort(),
    );

    // Every query of the dashboard parses, and every geode_ series it and the alerts name exists.
    const dashboard = readFileSync(
      path.join(REPO_ROOT, "infra/observability/grafana-dashboard.json"),
      "utf8",
    );
    const panels = (JSON.parse(dashboard) as { panels: Array<{ targets?: Array<{ expr: string }> }> }).panels;
    const exprs = panels
      .flatMap((p) => p.targets ?? [])
      .map((t) => t.expr.replaceAll("$job", ".+").replaceAll("$__rate_interval", "1m"));
    expect(exprs.length).toBeGreaterThan(20);
    for (const e of exprs) await query(e);
    const known = new Set(
      ((await (await fetch(`${promUrl}/api/v1/label/__name__/values`)).json()) as { data: string[] }).data,
    );
    const alerts = readFileSync(path.join(REPO_ROOT, "infra/observability/alerts.yml"), "utf8");
    const named = new Set([...`${dashboard}\n${alerts}`.matchAll(/\bgeode_[a-z_]+/g)].map((m) => m[0]));
    expect([...named].filter((n) => !known.has(n))).toEqual([]);

    // The alert rules load into the same Prometheus and evaluate without errors.
    const rules = (await (await fetch(`${promUrl}/api/v1/rules`)).json()) as {
      data: { groups: Array<{ rules: Array<{ name: string; health: string }> }> };
    };
    const loaded = rules.data.groups.flatMap((g) => g.rules);
    expect(loaded.map((r) => r.name)).toContain("GeodeRecorderLagging");
    await waitFor(async () => {
      const r = (await (await fetch(`${promUrl}/api/v1/rules`)).json()) as typeof rules;
      return r.data.groups.flatMap((g) => g.rules).every((x) => x.health === "ok");
    }, 30_000);
  });
});
