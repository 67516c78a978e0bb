import { execFile } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

/** A PostgreSQL server of a test's own, on a free loopback port: stop and start it at will. */
export interface PostgresServer {
  /** `postgres://postgres@127.0.0.1:{port}/postgres` (trust authentication). */
  readonly url: string;
  readonly port: number;
  /** `pg_ctl stop -m fast|immediate`: fast ends sessions cleanly, immediate like a crash. */
  stop(mode: "fast" | "immediate" | "smart"): Promise<void>;
  /** Starts it again on the same port and data directory. */
  start(): Promise<void>;
  /** Stops it (immediate) and deletes its data directory. */
  destroy(): Promise<void>;
}

/** The directory of Debian's PostgreSQL binaries (`PG_BIN`, else the newest /usr/lib/postgresql/N/bin). */
function findPostgresBin(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const fromEnv = env["PG_BIN"];
  if (fromEnv && existsSync(path.join(fromEnv, "initdb"))) return fromEnv;
  const root = "/usr/lib/postgresql";
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => existsSync(path.join(root, v, "bin", "initdb")))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] === undefined ? undefined : path.join(root, versions[0], "bin");
}

function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      srv.close(() => resolve(typeof addr === "object" && addr ? addr.port : 0));
    });
  });
}

/** `postgres` refuses to run as root: as root, run its tools as the `postgres` user. */
async function asPostgresUser(command: string, args: string[]): Promise<void> {
  const root = process.getuid?.() === 0;
  const [file, argv] = root ? ["runuser", ["-u", "postgres", "--", command, ...args]] : [command, args];
  await run(file, argv, { timeout: 60_000 });
}

/**
 * Creates a fresh cluster in a temporary directory (initdb, trust authentication, fsync off: a
 * test database) and starts it on a free loopback port with its socket in that directory. Needs
 * Debian's PostgreSQL server binaries and, as root, the `postgres` user.
 */
export async function startPostgresServer(): Promise<PostgresServer> {
  const bin = findPostgresBin();
  if (!bin)
    throw new Error("PostgreSQL server binaries not found (install Debian's postgresql, or set PG_BIN)");
  const dir = mkdtempSync(path.join(tmpdir(), "geode-pg-"));
  const data = path.join(dir, "data");
  const log = path.join(dir, "server.log");
  if (process.getuid?.() === 0) {
    const { stdout } = await run("id", ["-u", "postgres"]);
    const { stdout: gid } = await run("id", ["-g", "postgres"]);
    chownSync(dir, Number(stdout.trim()), Number(gid.trim()));
  }
  const port = await freeLoopbackPort();
  await asPostgresUser(path.join(bin, "initdb"), [
    "-D",
    data,
    "-A",
    "trust",
    "-U",
    "postgres",
    "-E",
    "UTF8",
    "--no-sync",
  ]);
  const pgCtl = path.join(bin, "pg_ctl");
  const options = `-p ${port} -h 127.0.0.1 -k ${dir} -c fsync=off -c full_page_writes=off`;
  const start = () =>
    asPostgresUser(pgCtl, ["start", "-w", "-t", "60", "-D", data, "-l", log, "-o", options]);
  await start();
  let running = true;
  const server: PostgresServer = {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    async stop(mode) {
      await asPostgresUser(pgCtl, ["stop", "-w", "-t", "60", "-D", data, "-m", mode]);
      running = false;
    },
    async start() {
      await start();
      running = true;
    },
    async destroy() {
      if (running) await server.stop("immediate").catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return server;
}
