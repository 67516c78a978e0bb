import { connectGeode, type GeodeConnection } from "@geode/sdk";

/**
 * Runs an example handler process: connects with the environment (NATS_URL, GEODE_NAMESPACE),
 * serves, prints `ready` for whoever started it, and closes cleanly (deleting its registrations)
 * on SIGTERM or SIGINT.
 */
export async function runHandlerProcess(
  name: string,
  serve: (conn: GeodeConnection) => Promise<Array<{ close(): Promise<void> }>>,
): Promise<void> {
  const conn = await connectGeode({ name });
  const served = await serve(conn);
  process.stdout.write(`${name} ready\n`);
  let closing = false;
  const close = async () => {
    if (closing) return;
    closing = true;
    for (const s of served) await s.close();
    await conn.close();
    process.exit(0);
  };
  process.on("SIGTERM", () => void close());
  process.on("SIGINT", () => void close());
}

/** True when this module is the process's entry point (`tsx examples/demo/<name>.ts`), not an import. */
export function isMain(meta: ImportMeta): boolean {
  return process.argv[1] === meta.filename;
}
