/**
 * A benchmark peer process. `echo`: a raw NATS responder (the floor). `forward`: a process in the
 * middle that does nothing but pass a request on to the echo responder once or three times in a
 * row (the floor of any dispatcher); on `bench.forward-audited.{1,3}` it also publishes one
 * `extension_invoked` event per echo call to the namespace's JetStream events stream, as the
 * dispatcher audits every handler call (the floor of any dispatcher that keeps that guarantee).
 * `handler <name> <priority>
 * [ns,ns,…]`: an SDK hook handler for UserPromptSubmit that answers `continue`, in its namespace or
 * in each one listed (one process, one connection).
 */

import { RuntimeEventBus, requestMsg } from "@geode/bus";
import { correlation, names } from "@geode/contracts";
import { connectGeode, HookName, serveHook } from "@geode/sdk";

const [mode, name = "h", priority = "0", namespaces] = process.argv.slice(2);
const conn = await connectGeode({ name: `bench-${mode}-${name}` });
let close: () => Promise<void>;
if (mode === "echo") {
  const sub = conn.nc.subscribe(`${conn.names.ns}.bench.echo`, {
    callback: (_err, msg) => {
      msg.respond(msg.data);
    },
  });
  close = async () => sub.unsubscribe();
} else if (mode === "forward") {
  // The least a process in the middle does: take the request, ask the echo responder 1 or 3
  // times in a row (on the connection's one reply inbox, as the dispatcher asks its handlers), answer.
  const echo = `${conn.names.ns}.bench.echo`;
  const events = await RuntimeEventBus.create({ nc: conn.nc, names: conn.names, source: "bench-forward" });
  const corr = correlation({ session_id: "bench", turn_id: "t" });
  // As the dispatcher does: each audit goes out, unawaited, right ahead of the next message.
  const audit = (started: number) =>
    void events.emit(
      "extension_invoked",
      {
        surface: "hook",
        name: "UserPromptSubmit",
        extension: "echo",
        status: "ok",
        reason: "",
        duration_ms: Math.round((performance.now() - started) * 1000) / 1000,
      },
      corr,
    );
  const subs = [1, 3].flatMap((times) =>
    [false, true].map((audited) =>
      conn.nc.subscribe(`${conn.names.ns}.bench.${audited ? "forward-audited" : "forward"}.${times}`, {
        callback: (_err, msg) => {
          void (async () => {
            let data = msg.data;
            for (let i = 0; i < times; i++) {
              const started = performance.now();
              data = (await requestMsg(conn.nc, echo, data, { timeoutMs: 5_000 })).data;
              if (audited) audit(started);
            }
            msg.respond(data);
          })();
        },
      }),
    ),
  );
  close = async () => {
    for (const sub of subs) sub.unsubscribe();
  };
} else {
  const served = await Promise.all(
    (namespaces ? namespaces.split(",") : [conn.names.ns]).map((ns) =>
      serveHook(
        { nc: conn.nc, names: names(ns) },
        HookName.UserPromptSubmit,
        { name, priority: Number(priority) },
        () => ({ action: "continue" }),
      ),
    ),
  );
  close = async () => {
    for (const s of served) await s.close();
  };
}
await conn.nc.flush();
process.stdout.write("ready\n");
const stop = async () => {
  await close();
  await conn.close();
  process.exit(0);
};
process.on("SIGTERM", () => void stop());
process.on("SIGINT", () => void stop());
