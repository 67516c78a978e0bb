import { Worker } from "node:worker_threads";
import type { OtlpProtocol } from "./otlp-protocol.js";
import type { SpanRecord } from "./span-records.js";

/** What the span thread is started with. */
export interface SpanThreadData {
  service: string;
  version: string;
  /** Read by the service (`otlpTracesProtocol`): the thread loads neither the config nor zod. */
  protocol: OtlpProtocol;
}

/** What the service posts to its span thread. */
export type SpanThreadMessage = { type: "spans"; records: SpanRecord[] } | { type: "stop" };

/** What the span thread answers: a batch made, or its last export done. */
export type SpanThreadReply = { type: "made" } | { type: "stopped" };

/**
 * The span thread's nice value (Linux, per thread): on a busy machine the scheduler gives a nice-10
 * thread about a tenth of what a nice-0 one gets, so the export's work fills the cores' idle time
 * instead of delaying requests.
 */
export const SPAN_THREAD_NICE = 10;

/**
 * Batches posted and not yet made before new ones are dropped: 64 of up to 256 spans. A thread
 * starved of CPU must not grow the service's memory without bound.
 */
const MAX_BATCHES_IN_FLIGHT = 64;

/**
 * Whether the span thread can start: from the compiled package (span-worker.js beside this file).
 * A process running the TypeScript sources (tsx's loader, which worker threads do not get on
 * Node 20) makes its spans in its own thread instead.
 */
export function spanThreadAvailable(): boolean {
  return import.meta.url.endsWith(".js");
}

/** How long a stop waits for the span thread's last export. */
const STOP_WAIT_MS = 10_000;

/**
 * A worker thread that makes and exports the spans this process notes (span-worker.ts). It never
 * keeps the process alive; if it fails, the spans posted after that are dropped (the service
 * keeps serving) and `onError` is told once.
 */
export class SpanThread {
  private readonly worker: Worker;
  private failed = false;
  private inFlight = 0;
  private stopped: (() => void) | undefined;
  /** Spans dropped because the thread fell behind or could not take them (told at stop). */
  private dropped = 0;

  constructor(data: SpanThreadData, env: NodeJS.ProcessEnv, onError: (err: unknown) => void) {
    this.worker = new Worker(new URL("./span-worker.js", import.meta.url), { workerData: data, env });
    this.worker.unref();
    this.worker.on("message", (reply: SpanThreadReply) => {
      if (reply.type === "made") this.inFlight--;
      else this.stopped?.();
    });
    this.worker.on("error", (err) => {
      if (!this.failed) onError(err);
      this.failed = true;
    });
  }

  /** Hands a batch of noted spans to the thread (copied; nothing of it is shared). */
  post(records: SpanRecord[]): void {
    if (this.failed || this.inFlight >= MAX_BATCHES_IN_FLIGHT) {
      this.dropped += records.length;
      return;
    }
    try {
      this.worker.postMessage({ type: "spans", records } satisfies SpanThreadMessage);
      this.inFlight++;
    } catch {
      // an attribute that cannot be copied: that batch is lost, the thread keeps going
      this.dropped += records.length;
    }
  }

  /** Exports what the thread still holds, then ends it. */
  async stop(): Promise<void> {
    if (!this.failed) {
      const stopped = new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, STOP_WAIT_MS);
        const done = () => {
          clearTimeout(timer);
          resolve();
        };
        this.stopped = done;
        this.worker.once("exit", done);
      });
      this.worker.postMessage({ type: "stop" } satisfies SpanThreadMessage);
      await stopped;
    }
    await this.worker.terminate();
    if (this.dropped > 0) process.emitWarning(`span thread fell behind: ${this.dropped} spans dropped`);
  }
}
