import net from "node:net";
import type { PGlite } from "@electric-sql/pglite";

/** An embedded database served over the PostgreSQL wire protocol on loopback. */
export interface PgliteServer {
  /** `postgres://postgres@127.0.0.1:{port}/postgres`: what every other process connects to. */
  readonly url: string;
  readonly port: number;
  /** Stops accepting, closes every connection (rolling back what they left open). */
  close(): Promise<void>;
}

const SSL_REQUEST = 80877103;
const GSSENC_REQUEST = 80877104;
const CANCEL_REQUEST = 80877102;
const PROTOCOL_3 = 196608;
/** Frontend messages after which the backend reports ReadyForQuery ("\0": the startup message). */
const ENDS_EXCHANGE = new Set(["S", "Q", "c", "f", "\0"]);
const SYNC = Uint8Array.from([0x53, 0, 0, 0, 4]);

class Session {
  buffer: Buffer = Buffer.alloc(0);
  readonly messages: Buffer[] = [];
  started = false;
  closed = false;
  constructor(readonly socket: net.Socket) {}

  /** Splits what arrived into whole protocol messages (the first one has no type byte). */
  take(chunk: Buffer): void {
    this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
    for (;;) {
      const untyped = !this.started;
      const header = untyped ? 4 : 5;
      if (this.buffer.length < header) return;
      const length = untyped ? this.buffer.readInt32BE(0) : 1 + this.buffer.readInt32BE(1);
      if (length < header - (untyped ? 0 : 1) || this.buffer.length < length) return;
      const message = this.buffer.subarray(0, length);
      this.buffer = this.buffer.subarray(length);
      if (untyped) {
        const code = message.length >= 8 ? message.readInt32BE(4) : 0;
        // SSL and GSS encryption requests precede the startup message: answer "no", stay untyped.
        if (code === SSL_REQUEST || code === GSSENC_REQUEST) {
          this.socket.write("N");
          continue;
        }
        if (code === CANCEL_REQUEST) {
          this.socket.end();
          return;
        }
        if (code === PROTOCOL_3) this.started = true;
      }
      this.messages.push(Buffer.from(message));
    }
  }
}

/**
 * Serves one PGlite instance (a single backend) to any number of loopback connections. A
 * connection holds the backend from its first message until the backend is idle again after that
 * exchange (ReadyForQuery `I` after a Sync or a simple query): a transaction, or an
 * extended-protocol batch (Parse/Bind/Execute/Sync), runs to its end before another connection's
 * messages are looked at, so no one sees another's unnamed statement or open transaction. A
 * connection that goes away while holding the backend is rolled back. (The socket server of the
 * PGlite project schedules per message and interleaves concurrent extended-protocol batches.)
 */
export async function servePglite(db: PGlite, options: { port?: number } = {}): Promise<PgliteServer> {
  await db.waitReady;
  const sessions = new Set<Session>();
  const ready: Session[] = [];
  let holder: Session | undefined;
  let running = false;

  const schedule = () => {
    if (running) return;
    running = true;
    void drive().finally(() => {
      running = false;
      if (nextSession()) schedule();
    });
  };

  const nextSession = (): Session | undefined => {
    if (holder) return holder.messages.length > 0 || holder.closed ? holder : undefined;
    return ready.find((s) => s.messages.length > 0);
  };

  const release = (s: Session) => {
    if (holder === s) holder = undefined;
    const i = ready.indexOf(s);
    if (i >= 0) ready.splice(i, 1);
    // Round robin: a connection that had its turn queues behind the others.
    if (!s.closed) ready.push(s);
  };

  /** A connection that ended: nothing of it runs any more. */
  const forget = (s: Session) => {
    s.closed = true;
    s.messages.length = 0;
    const i = ready.indexOf(s);
    if (i >= 0) ready.splice(i, 1);
  };

  /** Ends what a vanished connection left open on the backend. */
  const reset = async () => {
    await db.execProtocolRawStream(SYNC, { onRawData: () => undefined });
    if (db.isInTransaction()) await db.exec("ROLLBACK");
  };

  const drive = async () => {
    for (let s = nextSession(); s; s = nextSession()) {
      // Let sockets be read and written between two exchanges.
      await new Promise((r) => setImmediate(r));
      holder = s;
      if (s.closed) {
        await reset().catch(() => undefined);
        holder = undefined;
        continue;
      }
      // Everything queued up to the end of the exchange goes to the backend in one call.
      let count = 0;
      let ends = false;
      for (const m of s.messages) {
        const type = String.fromCharCode(m[0]!);
        if (type === "X") break;
        count++;
        if (ENDS_EXCHANGE.has(type)) {
          ends = true;
          break;
        }
      }
      if (count === 0) {
        // Terminate: the connection ends; `reset` runs before anyone else.
        forget(s);
        s.socket.end();
        continue;
      }
      const messages = s.messages.splice(0, count);
      let tail = Buffer.alloc(0);
      try {
        await db.execProtocolRawStream(messages.length === 1 ? messages[0]! : Buffer.concat(messages), {
          onRawData: (data) => {
            if (!s.socket.destroyed) s.socket.write(data);
            tail = Buffer.concat([tail, Buffer.from(data)]).subarray(-6);
          },
        });
      } catch {
        forget(s);
        s.socket.destroy();
        continue;
      }
      const idle = tail.length === 6 && tail[0] === 0x5a && tail.readInt32BE(1) === 5 && tail[5] === 0x49; // 'Z', 'I'
      if (idle && ends) release(s);
    }
  };

  const server = net.createServer((socket) => {
    const s = new Session(socket);
    sessions.add(s);
    ready.push(s);
    socket.setNoDelay(true);
    socket.on("data", (chunk: Buffer) => {
      s.take(chunk);
      schedule();
    });
    const gone = () => {
      if (!sessions.delete(s)) return;
      forget(s);
      // Holding the backend: `drive` rolls it back before anyone else runs.
      if (holder === s) schedule();
    };
    socket.on("error", gone);
    socket.on("close", gone);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, "127.0.0.1", () => resolve());
  });
  const port = (server.address() as net.AddressInfo).port;
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of sessions) s.socket.destroy();
      await closed;
      while (running) await new Promise((r) => setTimeout(r, 10));
    },
  };
}
