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

/** How many of the queued messages form the rest of the current exchange, and whether it ends there. */
function nextExchange(messages: readonly Buffer[]): { count: number; ends: boolean } {
  let count = 0;
  for (const m of messages) {
    const type = String.fromCharCode(m[0]!);
    if (type === "X") break;
    count++;
    if (ENDS_EXCHANGE.has(type)) return { count, ends: true };
  }
  return { count, ends: false };
}

/** True when `tail` (the last bytes a backend sent) is ReadyForQuery with status idle. */
function endsIdle(tail: Buffer): boolean {
  return tail.length === 6 && tail[0] === 0x5a && tail.readInt32BE(1) === 5 && tail[5] === 0x49; // 'Z', 'I'
}

/** Hands the one backend to the connections in turn, one whole exchange at a time. */
class BackendScheduler {
  readonly sessions = new Set<Session>();
  private readonly ready: Session[] = [];
  private holder: Session | undefined;
  running = false;

  constructor(private readonly db: PGlite) {}

  attach(socket: net.Socket): void {
    const s = new Session(socket);
    this.sessions.add(s);
    this.ready.push(s);
    socket.setNoDelay(true);
    socket.on("data", (chunk: Buffer) => {
      s.take(chunk);
      this.schedule();
    });
    const gone = () => {
      if (!this.sessions.delete(s)) return;
      this.forget(s);
      // Holding the backend: `drive` rolls it back before anyone else runs.
      if (this.holder === s) this.schedule();
    };
    socket.on("error", gone);
    socket.on("close", gone);
  }

  private schedule(): void {
    if (this.running) return;
    this.running = true;
    void this.drive().finally(() => {
      this.running = false;
      if (this.next()) this.schedule();
    });
  }

  private next(): Session | undefined {
    const h = this.holder;
    if (h) return h.messages.length > 0 || h.closed ? h : undefined;
    return this.ready.find((s) => s.messages.length > 0);
  }

  /** Round robin: a connection that had its turn queues behind the others. */
  private release(s: Session): void {
    if (this.holder === s) this.holder = undefined;
    const i = this.ready.indexOf(s);
    if (i >= 0) this.ready.splice(i, 1);
    if (!s.closed) this.ready.push(s);
  }

  /** A connection that ended: nothing of it runs any more. */
  private forget(s: Session): void {
    s.closed = true;
    s.messages.length = 0;
    const i = this.ready.indexOf(s);
    if (i >= 0) this.ready.splice(i, 1);
  }

  /** Ends what a vanished connection left open on the backend. */
  private async reset(): Promise<void> {
    await this.db.execProtocolRawStream(SYNC, { onRawData: () => undefined });
    if (this.db.isInTransaction()) await this.db.exec("ROLLBACK");
  }

  private async drive(): Promise<void> {
    for (let s = this.next(); s; s = this.next()) {
      // Let sockets be read and written between two exchanges.
      await new Promise((r) => setImmediate(r));
      this.holder = s;
      if (s.closed) {
        await this.reset().catch(() => undefined);
        this.holder = undefined;
      } else await this.step(s);
    }
  }

  /** Runs what `s` has queued of its exchange, in one call; releases the backend at its end. */
  private async step(s: Session): Promise<void> {
    const { count, ends } = nextExchange(s.messages);
    if (count === 0) {
      // Terminate: the connection ends; `reset` runs before anyone else.
      this.forget(s);
      s.socket.end();
      return;
    }
    const messages = s.messages.splice(0, count);
    let tail = Buffer.alloc(0);
    try {
      await this.db.execProtocolRawStream(messages.length === 1 ? messages[0]! : Buffer.concat(messages), {
        onRawData: (data) => {
          if (!s.socket.destroyed) s.socket.write(data);
          tail = Buffer.concat([tail, Buffer.from(data)]).subarray(-6);
        },
      });
    } catch {
      this.forget(s);
      s.socket.destroy();
      return;
    }
    if (ends && endsIdle(tail)) this.release(s);
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
  const scheduler = new BackendScheduler(db);
  const server = net.createServer((socket) => scheduler.attach(socket));
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
      for (const s of scheduler.sessions) s.socket.destroy();
      await closed;
      while (scheduler.running) await new Promise((r) => setTimeout(r, 10));
    },
  };
}
