import { RuntimeEventBus } from "@geode/bus";
import { HookName } from "@geode/contracts";
import { startHookDispatcher } from "@geode/hook-dispatcher";
import { serveApprovals, serveHook, serveTool } from "@geode/sdk";
import { serveHealth } from "@geode/service";
import { useTestEnv, waitFor } from "@geode/testing";
import { startToolExecutor } from "@geode/tool-executor";
import { startVerifier } from "@geode/verifier";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const env = useTestEnv();
const stops: Array<() => Promise<void>> = [];
let handled = 0;

const nested = (depth: number): string => `${"[".repeat(depth)}${"]".repeat(depth)}`;
const nestedObject = (depth: number): string => `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`;

beforeAll(async () => {
  const { nc, names } = env();
  const events = await RuntimeEventBus.create({ nc, names, source: "test" });
  const dispatcher = await startHookDispatcher({ nc, names, events });
  stops.push(() => dispatcher.stop());
  const executor = await startToolExecutor({ nc, names, events });
  stops.push(() => executor.stop());
  const verifier = await startVerifier({ nc, names, events });
  stops.push(() => verifier.stop());
  const conn = { nc, names };
  const hook = await serveHook(conn, HookName.PreToolUse, { name: "degenerate" }, () => {
    handled++;
    return null;
  });
  stops.push(() => hook.close());
  const tool = await serveTool(
    conn,
    {
      name: "deg.tool",
      description: "d",
      input_schema: { type: "object" },
      effect: "read",
      requires_approval: false,
    },
    () => {
      handled++;
      return { result: {} };
    },
  );
  stops.push(() => tool.close());
  const approvals = serveApprovals(conn, () => {
    handled++;
    return "allow";
  });
  stops.push(() => approvals.close());
  const health = serveHealth(nc, names, "degenerate");
  stops.push(() => health.drain());
  await waitFor(() => dispatcher.handlers().length === 1);
});

afterAll(async () => {
  for (const stop of stops.reverse()) await stop().catch(() => undefined);
});

const DEEP = nested(10_000);

/** Every request subject, with a body of the right shape that carries `value` where it may. */
const subjects = (): Array<[string, (value: string) => string]> => {
  const n = env().names;
  const corr = '{"session_id":"s-deg","turn_id":"t-deg","tool_call_id":"c-deg"}';
  return [
    [n.hookInvoke("PreToolUse"), (v) => `{"payload":{"tool_name":"echo","arguments":{"x":${v}}}}`],
    [
      n.hookHandler("PreToolUse", "degenerate"),
      (v) =>
        `{"schema_version":"geode.public-hook.v2","name":"PreToolUse","correlation":{"session_id":"s","turn_id":"t","step_id":"","run_id":"","session_generation":0,"verify_attempt":0,"tool_call_id":"","llm_call_id":"","llm_attempt_id":""},"payload":{"tool_name":"echo","arguments":{"x":${v}}}}`,
    ],
    [n.toolExecute, (v) => `{"tool_name":"echo","arguments":{"x":${v}},"correlation":${corr}}`],
    [n.toolTerminal("deg.tool"), (v) => `{"tool_name":"deg.tool","arguments":{"x":${v}},"correlation":{}}`],
    [
      n.approvalRequest,
      (v) =>
        `{"approval_id":"a","tool_name":"t","safety_level":"read","detail":"d","correlation":{},"x":${v}}`,
    ],
    [
      n.verifyFinalize,
      (v) =>
        `{"correlation":${corr},"candidate":{"text":"t","termination_reason":"natural","rounds":1,"tool_call_count":0},"x":${v}}`,
    ],
    [n.verifyResolve, (v) => `{"correlation":${corr},"action":"deliver","x":${v}}`],
    [n.health("degenerate"), (v) => `{"x":${v}}`],
  ];
};

const bodies: Array<[string, (valid: (value: string) => string) => string]> = [
  ["10,000-deep nested arrays", () => DEEP],
  ["10,000-deep nested objects", () => nestedObject(10_000)],
  ["a 10,000-deep value inside a well-formed request", (valid) => valid(DEEP)],
  ["invalid JSON", () => "{not json"],
  ["invalid UTF-8", () => "\xff"],
  ["a JSON array", () => "[1,2,3]"],
  ["a JSON string", () => '"hello"'],
  ["null", () => "null"],
  ["a number", () => "42"],
  ["a 200,000-item array", () => `[${Array.from({ length: 200_000 }, () => "0").join(",")}]`],
  ["an object of the wrong shape", () => '{"unexpected":true}'],
];

describe("degenerate input on every request subject", () => {
  for (const [what, body] of bodies) {
    it(`answers ${what} with invalid_request or invalid_payload`, async () => {
      const answers: Record<string, string> = {};
      for (const [subject, valid] of subjects()) {
        const text = body(valid);
        const data = text === "\\xff" ? new Uint8Array([0xff, 0xfe]) : new TextEncoder().encode(text);
        const msg = await env().nc.request(subject, data, { timeout: 10_000 });
        const reply = msg.json<{ error?: { code: string; message: string } }>();
        answers[subject] = reply.error ? `${reply.error.code}: ${reply.error.message}` : "no error";
      }
      const coded = expect.stringMatching(/^invalid_(request|payload): (?![\s\S]*call stack)/i);
      expect(answers).toEqual(Object.fromEntries(Object.keys(answers).map((s) => [s, coded])));
      expect(handled).toBe(0);
    }, 60_000);
  }
});
