import { type ChildProcess, spawn } from "node:child_process";
import { PassThrough } from "node:stream";
import {
  deserializeMessage,
  type JSONRPCMessage,
  SdkError,
  SdkErrorCode,
  serializeMessage,
  type Transport,
} from "@modelcontextprotocol/client";

/** How long a stdio server gets to exit after its stdin closed, and again after SIGTERM. */
const EXIT_GRACE_MS = 2_000;

export interface StrictStdioOptions {
  command: string;
  args: string[];
  env: Record<string, string>;
  /** The longest message line the server may write; a longer one ends the connection. */
  maxMessageBytes: number;
}

/**
 * The client side of a stdio MCP server the bridge starts, strict about what the server writes:
 * the MCP stdio transport allows nothing but JSON-RPC messages, one a line, on stdout. A line that
 * is not one, or a message over `maxMessageBytes`, ends the connection with an error that says so
 * (`failure`, which otherwise says how the server exited), so the server is marked failed and restarted and its calls are answered at once,
 * where a lenient reader would skip the line and leave them waiting for their time limit. What is
 * buffered is bounded by `maxMessageBytes`.
 */
export class StrictStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  /** The server's stderr, readable before `start()`. */
  readonly stderr = new PassThrough();
  /** Why the connection ended: what the transport refused, else how the server exited. */
  failure: string | undefined;
  private child: ChildProcess | undefined;
  private chunks: Buffer[] = [];
  private buffered = 0;

  constructor(private readonly options: StrictStdioOptions) {}

  /** The server's pid while it runs (set as soon as `start()` has spawned it). */
  get pid(): number | null {
    return this.child?.pid ?? null;
  }

  start(): Promise<void> {
    if (this.child) throw new Error("the stdio transport is already started");
    const { command, args, env } = this.options;
    return new Promise((resolve, reject) => {
      const child = spawn(command, args, { env, stdio: ["pipe", "pipe", "pipe"], shell: false });
      this.child = child;
      child.on("error", (err) => {
        reject(err);
        this.onerror?.(err);
      });
      child.on("spawn", () => resolve());
      child.on("close", (code, signal) => {
        this.failure ??= signal
          ? `the server was stopped by ${signal}`
          : `the server exited with code ${code}`;
        this.child = undefined;
        this.chunks = [];
        this.buffered = 0;
        this.onclose?.();
      });
      child.stdin?.on("error", (err) => this.onerror?.(err));
      child.stdout?.on("error", (err) => this.onerror?.(err));
      child.stdout?.on("data", (chunk: Buffer) => this.read(chunk));
      child.stderr?.pipe(this.stderr);
    });
  }

  private read(chunk: Buffer): void {
    if (this.failure !== undefined) return;
    let start = 0;
    for (let nl = chunk.indexOf(10); nl !== -1; nl = chunk.indexOf(10, start)) {
      const part = chunk.subarray(start, nl);
      start = nl + 1;
      if (this.buffered + part.length > this.options.maxMessageBytes) {
        this.overflow();
        return;
      }
      const line = Buffer.concat([...this.chunks, part]);
      this.chunks = [];
      this.buffered = 0;
      if (!this.message(line)) return;
    }
    const rest = chunk.subarray(start);
    if (this.buffered + rest.length > this.options.maxMessageBytes) {
      this.overflow();
      return;
    }
    if (rest.length > 0) {
      this.chunks.push(rest);
      this.buffered += rest.length;
    }
  }

  /** One line: a JSON-RPC message passed on, or the end of the connection. */
  private message(line: Buffer): boolean {
    const text = line.toString("utf8").replace(/\r$/, "");
    if (text.trim() === "") return true;
    let message: JSONRPCMessage;
    try {
      message = deserializeMessage(text);
    } catch {
      this.end(`the server wrote ${line.length} bytes to stdout that are not a JSON-RPC message`);
      return false;
    }
    this.onmessage?.(message);
    return true;
  }

  private overflow(): void {
    this.end(`the server wrote a message over ${this.options.maxMessageBytes} bytes`);
  }

  private end(failure: string): void {
    this.failure = failure;
    this.chunks = [];
    this.buffered = 0;
    this.onerror?.(new Error(failure));
    void this.close();
  }

  async send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.child?.stdin;
    if (!stdin || this.failure !== undefined) throw new SdkError(SdkErrorCode.NotConnected, "Not connected");
    return new Promise((resolve) => {
      if (stdin.write(serializeMessage(message))) resolve();
      else stdin.once("drain", resolve);
    });
  }

  /** Closes stdin, then SIGTERM, then SIGKILL, each after a grace period. */
  async close(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const closed = new Promise<void>((resolve) => child.once("close", () => resolve()));
    const wait = () =>
      Promise.race([closed, new Promise<void>((resolve) => setTimeout(resolve, EXIT_GRACE_MS).unref())]);
    try {
      child.stdin?.end();
    } catch {
      // already closed
    }
    await wait();
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM");
      await wait();
    }
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  }
}
