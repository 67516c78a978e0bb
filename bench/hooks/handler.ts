/**
 * A benchmark peer process. `echo`: a raw NATS responder (the floor). `forward`: a process in the
 * middle that does nothing but pass a request on to the echo responder once or three times in a
 * row (the floor of any dispatcher). `handler <name> <priority>
 * [ns,ns,…]`: an SDK hook handler for UserPromptSubmit that answers `continue`, in its namespace or
 * in each one listed (one process, one connection).
 */

import { requestMsg } from "@geode/bus";
import { names } from "@geode/contracts";
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
  const subs = [1, 3].map((times) =>
    conn.nc.subscribe(`${conn.names.ns}.bench.forward.${times}`, {
      callback: (_err, msg) => {
        void (async () => {
          let data = msg.data;
          for (let i = 0; i < times; i++)
            data = (await requestMsg(conn.nc, echo, data, { timeoutMs: 5_000 })).data;
          msg.respond(data);
        })();
      },
    }),
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
