import { createHash, randomBytes, randomUUID } from "node:crypto";
import { decodeJson, encodeJson, type GeodeConnection } from "@geode/bus";
import {
  type ObjectInfo,
  ObjectInfoSchema,
  type ResultRef,
  type ResultWriter,
  resultChunkPrefix,
  resultMetaSubject,
} from "@geode/contracts";
import {
  JetStreamApiError,
  type JetStreamClient,
  type JetStreamManager,
  jetstream,
  jetstreamManager,
} from "@nats-io/jetstream";

/** Why a reference could not be turned back into its result. */
export type ResultRefProblem = "missing" | "foreign" | "mismatch" | "too_large" | "invalid";

/** A reference that does not resolve: gone (expired), not its writer's, or not what it claims. */
export class ResultRefError extends Error {
  override readonly name = "ResultRefError";
  constructor(
    readonly problem: ResultRefProblem,
    message: string,
  ) {
    super(message);
  }
}

/** The Object Store's own chunk size (128 KiB), as `@nats-io/obj` and `nats object put` write. */
const CHUNK_BYTES = 128 * 1024;
/** Chunks in flight while writing: enough to fill the pipe, bounded in memory. */
const WRITE_WINDOW = 16;
/** How long a read may take for the chunks it knows are stored. */
const READ_TIMEOUT_MS = 30_000;
/** An object id: the writer's subject tokens and one random token (no wildcard can slip in). */
const NUID = /^(executor|tool\.[A-Za-z0-9_=-]{1,100})\.[A-Za-z0-9]{16,32}$/;

/** The Object Store's digest form of a SHA-256 given in hex: `SHA-256=` + padded base64url. */
function objectDigest(hex: string): string {
  const b64 = Buffer.from(hex, "hex").toString("base64");
  return `SHA-256=${b64.replaceAll("+", "-").replaceAll("/", "_")}`;
}

/**
 * Large tool results in the Object Store bucket `{ns}_results` (docs/protocol.md#large-results),
 * written and read in the Object Store's own format, so `nats object get` and `@nats-io/obj`
 * read them too. Each writer puts its chunks under its own subjects (a tool's provider under
 * `C.tool.{tool}`, the tool-executor under `C.executor`) and names objects unguessably; a writer
 * needs no read right. A read checks the reference against the object: its writer when one is
 * required, its size and its SHA-256, before it returns anything. The bucket is created by the
 * tool-executor (`ensureResultStore`).
 */
export class ResultStore {
  private readonly js: JetStreamClient;
  private jsm: Promise<JetStreamManager> | undefined;

  constructor(private readonly conn: GeodeConnection) {
    this.js = jetstream(conn.nc);
  }

  /**
   * The result as it may travel: itself when its compact JSON fits in `inlineBytes`, else a
   * reference to it, stored here by `writer` (or `reuse`, an object already stored with the same
   * bytes, as when a result passes through unchanged).
   */
  async offload(
    result: Record<string, unknown>,
    options: { inlineBytes: number; writer: ResultWriter; toolName: string; reuse?: ResultRef | undefined },
  ): Promise<{ result: Record<string, unknown>; ref: ResultRef | null }> {
    const data = encodeJson(result);
    if (data.byteLength <= options.inlineBytes) return { result, ref: null };
    const { reuse } = options;
    if (reuse && reuse.bytes === data.byteLength && reuse.sha256 === sha256Hex(data))
      return { result: reuse, ref: reuse };
    const ref = await this.putBytes(data, options.writer, options.toolName);
    return { result: ref, ref };
  }

  /** Stores bytes as one object named `{tool}/{random}` under the writer's chunk subjects. */
  async putBytes(data: Uint8Array, writer: ResultWriter, toolName: string): Promise<ResultRef> {
    const n = this.conn.names;
    const name = `${toolName}/${randomUUID()}`;
    const nuid = `${resultChunkPrefix(n, writer).slice(`$O.${n.resultStore}.C.`.length)}.${randomBytes(16).toString("hex")}`;
    const subject = `$O.${n.resultStore}.C.${nuid}`;
    const maxChunk = Math.min(CHUNK_BYTES, this.conn.nc.info?.max_payload ?? CHUNK_BYTES);
    const chunks: Uint8Array[] = [];
    for (let at = 0; at < data.byteLength; at += maxChunk) chunks.push(data.subarray(at, at + maxChunk));
    for (let i = 0; i < chunks.length; i += WRITE_WINDOW)
      await Promise.all(chunks.slice(i, i + WRITE_WINDOW).map((c) => this.js.publish(subject, c)));
    const sha256 = sha256Hex(data);
    const info = {
      name,
      description: "",
      options: { max_chunk_size: maxChunk },
      metadata: { tool_name: toolName },
      bucket: n.resultStore,
      nuid,
      size: data.byteLength,
      chunks: chunks.length,
      mtime: new Date().toISOString(),
      digest: objectDigest(sha256),
      deleted: false,
    };
    await this.js.publish(resultMetaSubject(n, name), JSON.stringify(info));
    return { $ref: name, bytes: data.byteLength, sha256 };
  }

  /**
   * The result a reference stands for. Throws ResultRefError when the object is gone (`missing`:
   * expired or never written), was not written by `writer` (`foreign`), is larger than `maxBytes`
   * (`too_large`), differs from the reference in size or SHA-256 (`mismatch`) or is not a JSON
   * object (`invalid`); NATS failures are thrown as they are.
   */
  async get(
    ref: ResultRef,
    options: { writer?: ResultWriter; maxBytes?: number } = {},
  ): Promise<Record<string, unknown>> {
    if (options.maxBytes !== undefined && ref.bytes > options.maxBytes)
      throw new ResultRefError(
        "too_large",
        `result ${ref.$ref} has ${ref.bytes} bytes, more than the ${options.maxBytes} allowed`,
      );
    const info = await this.info(ref);
    if (!info)
      throw new ResultRefError("missing", `result ${ref.$ref} is not in ${this.conn.names.resultStore}`);
    this.check(ref, info, options.writer);
    const data = await this.readChunks(ref, info);
    let value: unknown;
    try {
      value = decodeJson(data);
    } catch (err) {
      throw new ResultRefError("invalid", `result ${ref.$ref} is not JSON: ${(err as Error).message}`);
    }
    if (value === null || typeof value !== "object" || Array.isArray(value))
      throw new ResultRefError("invalid", `result ${ref.$ref} is not a JSON object`);
    return value as Record<string, unknown>;
  }

  /** True while the object a reference names is stored (not expired, not deleted). */
  async has(ref: ResultRef): Promise<boolean> {
    return (await this.info(ref)) !== null;
  }

  private manager(): Promise<JetStreamManager> {
    this.jsm ??= jetstreamManager(this.conn.nc, { checkAPI: false });
    return this.jsm;
  }

  /** The object's ObjectInfo, or null when it is not (or no longer) stored. */
  private async info(ref: ResultRef): Promise<ObjectInfo | null> {
    const n = this.conn.names;
    const jsm = await this.manager();
    let m: Awaited<ReturnType<JetStreamManager["streams"]["getMessage"]>>;
    try {
      m = await jsm.streams.getMessage(n.resultStream, { last_by_subj: resultMetaSubject(n, ref.$ref) });
    } catch (err) {
      // No bucket at all: nothing it named is stored.
      if (err instanceof JetStreamApiError && err.code === 10059) return null;
      throw err;
    }
    if (!m) return null;
    const parsed = ObjectInfoSchema.safeParse(safeJson(m.data));
    if (!parsed.success) throw new ResultRefError("invalid", `result ${ref.$ref} has no valid ObjectInfo`);
    return parsed.data.deleted ? null : parsed.data;
  }

  private check(ref: ResultRef, info: ObjectInfo, writer: ResultWriter | undefined): void {
    const n = this.conn.names;
    if (info.options?.link !== undefined && info.options.link !== null)
      throw new ResultRefError("foreign", `result ${ref.$ref} is a link, not an object`);
    if (!NUID.test(info.nuid) || info.bucket !== n.resultStore)
      throw new ResultRefError("foreign", `result ${ref.$ref} is not stored the way GEODE stores results`);
    if (writer !== undefined) {
      const own = `${resultChunkPrefix(n, writer)}.`;
      if (!`$O.${n.resultStore}.C.${info.nuid}`.startsWith(own))
        throw new ResultRefError(
          "foreign",
          `result ${ref.$ref} was not written by ${writer === "tool-executor" ? writer : `the provider of ${writer.tool}`}`,
        );
    }
    if (info.size !== ref.bytes || info.digest !== objectDigest(ref.sha256))
      throw new ResultRefError(
        "mismatch",
        `result ${ref.$ref} does not match its reference's size and sha256`,
      );
  }

  /** Reads the chunks in order with an ordered consumer, checking count, size and digest. */
  private async readChunks(ref: ResultRef, info: ObjectInfo): Promise<Uint8Array> {
    const n = this.conn.names;
    const subject = `$O.${n.resultStore}.C.${info.nuid}`;
    const jsm = await this.manager();
    if (!(await jsm.streams.getMessage(n.resultStream, { last_by_subj: subject })))
      throw new ResultRefError("missing", `the chunks of result ${ref.$ref} are no longer stored`);
    const consumer = await this.js.consumers.get(n.resultStream, { filter_subjects: subject });
    const messages = await consumer.consume({ max_messages: WRITE_WINDOW });
    const timer = setTimeout(() => void messages.close(), READ_TIMEOUT_MS);
    const hash = createHash("sha256");
    const parts: Uint8Array[] = [];
    let bytes = 0;
    let problem: string | undefined;
    try {
      for await (const m of messages) {
        if (parts.length === 0 && m.info.pending + 1 !== info.chunks) {
          problem = `has ${m.info.pending + 1} chunks stored, not ${info.chunks}`;
          break;
        }
        hash.update(m.data);
        parts.push(m.data);
        bytes += m.data.byteLength;
        if (parts.length === info.chunks || bytes > ref.bytes) break;
      }
    } finally {
      clearTimeout(timer);
      await messages.close();
    }
    problem ??=
      parts.length < info.chunks
        ? `was not read in ${READ_TIMEOUT_MS} ms`
        : bytes !== ref.bytes || hash.digest("hex") !== ref.sha256
          ? "does not match its reference's size and sha256"
          : undefined;
    if (problem !== undefined) throw new ResultRefError("mismatch", `result ${ref.$ref} ${problem}`);
    return Buffer.concat(parts);
  }
}

function sha256Hex(data: Uint8Array): string {
  return createHash("sha256").update(data).digest("hex");
}

function safeJson(data: Uint8Array): unknown {
  try {
    return JSON.parse(new TextDecoder().decode(data));
  } catch {
    return undefined;
  }
}
