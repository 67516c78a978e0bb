/**
 * A hook handler without the SDK: any NATS client in any language can do the same. It (1) puts its
 * registration in KV `{ns}_hook_handlers` under `{HookName}.{name}` and refreshes `heartbeat_at`,
 * (2) answers `{ns}.hook.handler.{HookName}.{name}` in queue group `{name}` with
 * `{"decision": null}` or `{"decision": {...}}`. Here: UserPromptSubmit, rewriting "please" away.
 * Run: `pnpm tsx examples/handlers/raw-nats-handler.ts`.
 */
import { Kvm } from "@nats-io/kv";
import { connect } from "@nats-io/transport-node";

const ns = process.env["GEODE_NAMESPACE"] ?? "geode";
const nc = await connect({ servers: process.env["NATS_URL"] ?? "nats://127.0.0.1:4222" });
const hook = "UserPromptSubmit";
const name = "no-please";

nc.subscribe(`${ns}.hook.handler.${hook}.${name}`, {
  queue: name,
  callback: (_err, msg) => {
    const envelope = msg.json<{ payload: { user_input: string } }>();
    const text = envelope.payload.user_input;
    const rewritten = text.replace(/\bplease\b\s*/gi, "");
    const decision =
      rewritten === text ? null : { action: "rewrite", updates: { user_input: rewritten }, reason: "terse" };
    msg.respond(JSON.stringify({ decision }));
  },
});

const kv = await new Kvm(nc).create(`${ns}_hook_handlers`);
const leaseMs = 15_000;
const register = () =>
  kv.put(
    `${hook}.${name}`,
    JSON.stringify({
      hook,
      name,
      priority: 50,
      timeout_ms: 2_000,
      schema_version: "geode.public-hook.v2",
      failure_mode: "open",
      match: null,
      heartbeat_at: Date.now(),
      lease_ms: leaseMs,
    }),
  );
await register();
const timer = setInterval(() => void register(), leaseMs / 3);
process.stdout.write(`${name} serving ${ns}.hook.handler.${hook}.${name}\n`);

const stop = async () => {
  clearInterval(timer);
  await kv.delete(`${hook}.${name}`);
  await nc.drain();
  process.exit(0);
};
process.on("SIGINT", () => void stop());
process.on("SIGTERM", () => void stop());
