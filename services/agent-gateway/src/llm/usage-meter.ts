import type { LlmProviderKind, LlmUsage } from "@geode/contracts";
import { foldUsage } from "./provider-api.js";

/** The longest SSE line read for usage; a longer one passes through unread. */
const MAX_LINE_BYTES = 1024 * 1024;
const NEWLINE = 0x0a;
/** How every usage field's name begins in JSON (`"usage"`, `"usageMetadata"`). */
const USAGE_MARK = Buffer.from('"usage');
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
  /** The unfinished last line, in the pieces it came in (copies). */
  private pending: Buffer[] = [];
  private pendingBytes = 0;
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
    // The chunk is read in place: only the line it finishes (begun in an earlier chunk) is
    // joined, and only lines that mention usage are decoded and parsed.
    let from = 0;
    if (this.skipping || this.pendingBytes > 0) {
      const nl = chunk.indexOf(NEWLINE);
      if (nl < 0) {
        if (!this.skipping) this.keep(chunk);
        return;
      }
      if (!this.skipping) {
        this.pending.push(chunk.subarray(0, nl + 1));
        this.scan(Buffer.concat(this.pending), 0);
      }
      this.skipping = false;
      this.pending = [];
      this.pendingBytes = 0;
      from = nl + 1;
    }
    const lastNl = chunk.lastIndexOf(NEWLINE);
    if (lastNl < from) {
      this.keep(chunk.subarray(from));
      return;
    }
    this.scan(chunk.subarray(0, lastNl + 1), from);
    this.keep(chunk.subarray(lastNl + 1));
  }

  /** Reads the lines of `data` (whole lines from `from` on) that mention usage. */
  private scan(data: Buffer, from: number): void {
    let at = data.indexOf(USAGE_MARK, from);
    while (at >= 0) {
      const start = data.lastIndexOf(NEWLINE, at) + 1;
      const nl = data.indexOf(NEWLINE, at);
      const end = nl < 0 ? data.length : nl;
      this.line(data.toString("utf8", Math.max(start, from), end));
      if (nl < 0) return;
      at = data.indexOf(USAGE_MARK, nl + 1);
    }
  }

  /** Keeps the unfinished last line (a copy, so the chunk it came in is not held), within the bound. */
  private keep(rest: Buffer): void {
    if (rest.length === 0) return;
    this.pendingBytes += rest.length;
    if (this.pendingBytes > MAX_LINE_BYTES) {
      this.pending = [];
      this.pendingBytes = 0;
      this.skipping = true;
      return;
    }
    this.pending.push(Buffer.from(rest));
  }

  /** The answer ended: reads a JSON answer (or a last line without its newline). */
  end(): void {
    if (this.sse) {
      if (!this.skipping && this.pendingBytes > 0) this.line(Buffer.concat(this.pending).toString("utf8"));
      this.pending = [];
      this.pendingBytes = 0;
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
    if (!line.includes('"usage')) return;
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
