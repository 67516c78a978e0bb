/**
 * A benchmark peer process. `echo`: a raw NATS responder (the floor). `handler <name> <priority>
 * [ns,ns,…]`: an SDK hook handler for UserPromptSubmit that answers `continue`, in its namespace or
 * in each one listed (one process, one connection).
 */
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
