import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { startActivityRecorder } from "@geode/activity-recorder";
import { RuntimeEventBus } from "@geode/bus";
import { startHookDispatcher } from "@geode/hook-dispatcher";
import { MiddlewareRegistry } from "@geode/middleware";
import { useTestEnv, waitFor } from "@geode/testing";
import { startToolExecutor } from "@geode/tool-executor";
import { startVerifier } from "@geode/verifier";
import { Kvm } from "@nats-io/kv";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { serveAutoApprover } from "../examples/demo/approver.js";
import { serveCiEvaluator } from "../examples/demo/ci-evaluator.js";
import { serveObserver } from "../examples/demo/observer.js";
import { servePolicyGuard } from "../examples/demo/policy-guard.js";
import { serveRedactionCheck } from "../examples/demo/redaction-check.js";
import { type DemoSessionResult, runDemoSession } from "../examples/demo/session.js";
import { serveShellTool } from "../examples/demo/shell-tool.js";
import { register as registerToolMiddleware } from "../examples/demo/tool-middleware.js";
import { type SecuredNats, startSecuredNats } from "./security-support.js";

// The whole demo session on a nats-server with the generated per-role users: each service, each
// example handler, the approver, the remote tool and the runtime on its own user, as deployed.
const env = useTestEnv();
const toolRoot = mkdtempSync(path.join(tmpdir(), "geode-secure-demo-"));
let secured: SecuredNats;
const stops: Array<() => Promise<void>> = [];
let result: DemoSessionResult;

beforeAll(async () => {
  secured = await startSecuredNats({
    namespace: env().ns,
    handlers: ["policy-guard", "redaction-check", "ci-evaluator", "observer"],
    toolProviders: ["shell.exec"],
  });
  const names = env().names;
  const as = (user: string) => secured.as(user).then((nc) => ({ nc, names }));
  const dispatcher = await startHookDispatcher(await as("hook-dispatcher"));
  stops.push(() => dispatcher.stop());
  const middleware = new MiddlewareRegistry();
  registerToolMiddleware(middleware);
  const executor = await startToolExecutor({
    ...(await as("tool-executor")),
    middleware,
    config: { toolRoot, approvalTimeoutMs: 10_000 },
  });
  stops.push(() => executor.stop());
  const verifier = await startVerifier(await as("verifier"));
  stops.push(() => verifier.stop());
  const recorder = await startActivityRecorder({
    ...(await as("activity-recorder")),
    databaseUrl: env().databaseUrl,
    runsDir: null,
  });
  stops.push(() => recorder.stop());
  const served = [
    await servePolicyGuard(await as("handler-policy-guard")),
    await serveRedactionCheck(await as("handler-redaction-check")),
    await serveCiEvaluator(await as("handler-ci-evaluator")),
    ...(await serveObserver(await as("handler-observer"))),
    await serveShellTool(await as("tool-shell.exec")),
    serveAutoApprover(await as("approver")),
  ];
  stops.push(...served.map((s) => () => s.close()));
  await waitFor(() => dispatcher.handlers().length === 16);

  const runtime = await as("runtime");
  const events = await RuntimeEventBus.create({ ...runtime, source: "runtime" });
  result = await runDemoSession(runtime, events, () => undefined);
}, 120_000);

afterAll(async () => {
  for (const stop of stops.reverse()) await stop().catch(() => undefined);
  await secured?.stop();
  rmSync(toolRoot, { recursive: true, force: true });
});

describe("the demo session on a secured NATS, every component on its own user", () => {
  it("runs every step: approved write and its replay, the blocked shell call, one revision, then accept", () => {
    expect(result.write).toMatchObject({ status: "completed", executed: true });
    expect(result.retry).toMatchObject({ status: "replayed", executed: false });
    expect(result.blocked).toMatchObject({ status: "blocked", executed: false });
    expect(result.read.additional_context).toHaveLength(1);
    expect(result.verifications.map((v) => v.policy_action)).toEqual(["revise", "accept"]);
  });

  it("ends the session: SessionEnd fires, and the verifier clears the session's attempts", async () => {
    expect(result.ended).toEqual({ ended: true, hookError: null });
    const verify = await new Kvm(await secured.as("operator")).open(env().names.buckets.verify);
    const left = async () => {
      const keys: string[] = [];
      for await (const k of await verify.keys(env().names.verifySessionFilter(result.sessionId)))
        keys.push(k);
      return keys;
    };
    await waitFor(async () => (await left()).length === 0, 20_000);
  });

  it("no component was refused anything", () => {
    expect(secured.violations).toEqual([]);
  });
});
