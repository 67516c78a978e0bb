import { mkdir, open, readFile, stat, truncate } from "node:fs/promises";
import path from "node:path";
import type { Logger } from "@geode/bus";
import { type RunRecord, RunRecordSchema } from "@geode/contracts";
import type { ProjectedRow } from "@geode/projection";
import type { KV, KvWatchEntry } from "@nats-io/kv";

/** A run file stops at 16 MiB (docs/protocol.md#projection). */
export const DEFAULT_RUN_FILE_MAX_BYTES = 16 * 1024 * 1024;
/** Room always kept for the one `projection.truncated` line. */
const MARKER_RESERVE = 512;

/** One projected row to mirror, in the order it was consumed. */
export type MirrorItem = ProjectedRow;

interface RunFile {
  file: string;
  size: number;
  /** `{stream}:{stream_seq}` of every line in the file: a line is never written twice. */
  keys: Set<string>;
  truncated: boolean;
}

function isSafeSegment(runId: string): boolean {
  return /^[A-Za-z0-9_.-]{1,128}$/.test(runId) && !runId.startsWith(".") && !runId.endsWith(".");
}

const keyOf = (stream: string, seq: number) => `${stream}:${seq}`;

/**
 * Mirrors the rows of active runs to `{runsDir}/{run_id}/events.jsonl`. A row belongs to the mirror
 * when its run is in KV `{ns}_runs` and the row's `ts` lies in `[opened_at, closed_at]`, so late or
 * redelivered rows of an open interval are still mirrored and rows outside it never are. Each line
 * carries `stream` and `stream_seq`; the file's own lines are the dedup set, so a restart or a
 * redelivery neither duplicates nor skips a line.
 */
export class RunMirror {
  private readonly runs = new Map<string, RunRecord>();
  private readonly files = new Map<string, RunFile>();
  private watcher: (AsyncIterable<KvWatchEntry> & { stop(): void }) | undefined;
  private watching: Promise<void> | undefined;

  constructor(
    private readonly kv: KV,
    private readonly dir: string,
    private readonly maxBytes: number,
    private readonly log: Logger,
  ) {}

  async start(): Promise<void> {
    const w = await this.kv.watch({ key: ">" });
    this.watcher = w;
    this.watching = (async () => {
      for await (const e of w) {
        if (e.operation === "PUT") {
          const r = RunRecordSchema.safeParse(safeJson(e));
          if (r.success) this.runs.set(e.key, r.data);
        } else {
          this.runs.delete(e.key);
          this.files.delete(e.key);
        }
      }
    })().catch((err: unknown) => this.log.warn({ err }, "runs watch ended"));
  }

  async stop(): Promise<void> {
    this.watcher?.stop();
    await this.watching;
  }

  private async recordOf(runId: string, ts: number): Promise<RunRecord | null> {
    const cached = this.runs.get(runId);
    if (cached && (cached.status === "active" || ts <= (cached.closed_at ?? 0))) return cached;
    // Not seen yet (the watch may lag a fresh runs.open) or possibly re-opened: ask KV directly.
    const e = await this.kv.get(runId);
    if (e?.operation !== "PUT") return null;
    const r = RunRecordSchema.safeParse(safeJson(e));
    if (!r.success) return null;
    this.runs.set(runId, r.data);
    return r.data;
  }

  /** Appends the items of active runs; never throws (the projection does not depend on it). */
  async append(items: readonly MirrorItem[]): Promise<void> {
    const byRun = new Map<string, MirrorItem[]>();
    for (const it of items) {
      const runId = it.row.run_id;
      if (runId === "") continue;
      const list = byRun.get(runId);
      if (list) list.push(it);
      else byRun.set(runId, [it]);
    }
    for (const [runId, list] of byRun) {
      try {
        if (!isSafeSegment(runId)) continue;
        // One lookup per run per batch, valid for its newest row.
        const rec = await this.recordOf(runId, Math.max(...list.map((it) => it.row.ts)));
        if (!rec) continue;
        const chosen = list.filter(
          (it) => it.row.ts >= rec.opened_at && (rec.closed_at === null || it.row.ts <= rec.closed_at),
        );
        if (chosen.length > 0) await this.write(runId, chosen);
      } catch (err) {
        this.log.warn({ err, run_id: runId }, "run timeline mirror failed");
      }
    }
  }

  private async load(runId: string): Promise<RunFile> {
    let state = this.files.get(runId);
    if (state) return state;
    const folder = path.join(this.dir, runId);
    await mkdir(folder, { recursive: true });
    state = { file: path.join(folder, "events.jsonl"), size: 0, keys: new Set(), truncated: false };
    let text = "";
    try {
      text = await readFile(state.file, "utf8");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
    }
    // A process killed mid-write may leave a partial last line: cut it, its row comes again.
    const end = text.lastIndexOf("\n") + 1;
    if (end < text.length) {
      await truncate(state.file, Buffer.byteLength(text.slice(0, end)));
      text = text.slice(0, end);
    }
    this.scan(state, text);
    state.size = Buffer.byteLength(text);
    this.files.set(runId, state);
    return state;
  }

  private scan(state: RunFile, text: string): void {
    for (const line of text.split("\n")) {
      if (line === "") continue;
      try {
        const row = JSON.parse(line) as { type?: string; stream?: string; stream_seq?: number };
        if (row.type === "projection.truncated") state.truncated = true;
        else if (row.stream !== undefined && row.stream_seq !== undefined)
          state.keys.add(keyOf(row.stream, row.stream_seq));
      } catch {
        // not ours; keep going
      }
    }
  }

  private async write(runId: string, items: MirrorItem[]): Promise<void> {
    const state = await this.load(runId);
    // Another replica may have appended since we last looked: read what it wrote first.
    const size = (await stat(state.file).catch(() => ({ size: 0 }))).size;
    if (size > state.size) {
      const fh = await open(state.file, "r");
      try {
        const buf = Buffer.alloc(size - state.size);
        await fh.read(buf, 0, buf.length, state.size);
        const text = buf.toString("utf8");
        const end = text.lastIndexOf("\n") + 1;
        this.scan(state, text.slice(0, end));
        state.size += Buffer.byteLength(text.slice(0, end));
      } finally {
        await fh.close();
      }
    }
    if (state.truncated) return;
    const budget = this.maxBytes - MARKER_RESERVE;
    const lines: string[] = [];
    let bytes = state.size;
    let cut: MirrorItem | undefined;
    for (const it of items) {
      const key = keyOf(it.stream, it.row.stream_seq);
      if (state.keys.has(key)) continue;
      const line = `${JSON.stringify({ type: it.type, stream: it.stream, ...it.row })}\n`;
      const n = Buffer.byteLength(line);
      if (bytes + n > budget) {
        cut = it;
        break;
      }
      lines.push(line);
      state.keys.add(key);
      bytes += n;
    }
    if (cut) {
      lines.push(
        `${JSON.stringify({
          type: "projection.truncated",
          run_id: runId,
          ts: Date.now(),
          max_bytes: this.maxBytes,
          stream: cut.stream,
          stream_seq: cut.row.stream_seq,
        })}\n`,
      );
      state.truncated = true;
    }
    if (lines.length === 0) return;
    const text = lines.join("");
    const fh = await open(state.file, "a");
    try {
      await fh.write(text);
    } finally {
      await fh.close();
    }
    state.size += Buffer.byteLength(text);
  }
}

function safeJson(e: KvWatchEntry | { json<T>(): T }): unknown {
  try {
    return e.json();
  } catch {
    return null;
  }
}
