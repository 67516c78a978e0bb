import type { LlmProviderKind, LlmUsage } from "@geode/contracts";
import { foldUsage } from "./provider-api.js";

/** The longest SSE line read for usage; a longer one passes through unread. */
const MAX_LINE_BYTES = 1024 * 1024;
const NEWLINE = 0x0a;
/** What every usage field's name holds (`usage`, `usageMetadata`). */
const USAGE_MARK = Buffer.from("sage");
const EMPTY = Buffer.alloc(0);
/** The largest JSON answer read for usage; a larger one passes through unread. */
const MAX_JSON_BYTES = 16 * 1024 * 1024;

/**
 * Reads a call's usage from its answer as the chunks pass to the agent, never holding them up:
 * an SSE stream line by line (only `data:` lines that mention usage are parsed), a JSON answer
 * once it has all come.
 */
export class UsageMeter {
  readonly usage: LlmUsage = { input_tokens: 0, cached_input_tokens: 0, output_tokens: 0 };
  /** True once a usage field was read. */
  seen = false;
  private readonly sse: boolean;
  private pending: Buffer = EMPTY;
  private skipping = false;
  private json: Buffer[] = [];
  private jsonBytes = 0;

  constructor(
    private readonly kind: LlmProviderKind,
    contentType: string | undefined,
  ) {
    this.sse = (contentType ?? "").toLowerCase().includes("text/event-stream");
  }

  /** Looks at one chunk of the answer. */
  push(chunk: Buffer): void {
    if (!this.sse) {
      this.jsonBytes += chunk.length;
      if (this.jsonBytes <= MAX_JSON_BYTES) this.json.push(chunk);
      else this.json = [];
      return;
    }
    // Most chunks are deltas without usage: only a stretch that mentions it is decoded and read.
    let data = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    if (this.skipping) {
      // Inside a line longer than the bound: read again after its end.
      const nl = data.indexOf(NEWLINE);
      if (nl < 0) return;
      this.skipping = false;
      data = data.subarray(nl + 1);
    }
    const lastNl = data.lastIndexOf(NEWLINE);
    if (lastNl < 0) {
      this.keep(data);
      return;
    }
    const mark = data.indexOf(USAGE_MARK);
    if (mark >= 0 && mark < lastNl)
      for (const line of data.subarray(0, lastNl).toString("utf8").split("\n")) this.line(line);
    this.keep(data.subarray(lastNl + 1));
  }

  /** Keeps the unfinished last line (a copy, so the chunk it came in is not held), within the bound. */
  private keep(rest: Buffer): void {
    if (rest.length > MAX_LINE_BYTES) {
      this.pending = EMPTY;
      this.skipping = true;
      return;
    }
    this.pending = rest.length === 0 ? EMPTY : Buffer.from(rest);
  }

  /** The answer ended: reads a JSON answer (or a last line without its newline). */
  end(): void {
    if (this.sse) {
      if (!this.skipping && this.pending.length > 0) this.line(this.pending.toString("utf8"));
      this.pending = EMPTY;
      return;
    }
    if (this.json.length === 0) return;
    try {
      this.fold(JSON.parse(Buffer.concat(this.json).toString("utf8")));
    } catch {
      // not JSON: no usage to read
    }
    this.json = [];
  }

  private line(raw: string): void {
    const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
    if (!line.startsWith("data:")) return;
    // Deltas carry no usage: parse only what can.
    if (!line.includes("sage")) return;
    try {
      this.fold(JSON.parse(line.slice(5)));
    } catch {
      // a data line that is not JSON (`[DONE]`, garbage): passed through, not read
    }
  }

  private fold(obj: unknown): void {
    // Gemini answers a non-streamed call as one object, or an array of them.
    for (const o of Array.isArray(obj) ? obj : [obj])
      if (foldUsage(this.kind, o, this.usage)) this.seen = true;
  }
}
