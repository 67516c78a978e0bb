import { z } from "zod";
import type { Names } from "./names.js";
import type { ToolExecuteReply } from "./tool-execute.js";

/**
 * Large tool results (docs/protocol.md#large-results): a result whose compact JSON is over
 * `GEODE_RESULT_INLINE_BYTES` travels through the Object Store bucket `{ns}_results`, and the
 * message carries `{"$ref": "<object name>", "bytes": N, "sha256": "<hex>"}` in its place.
 */
export const DEFAULT_RESULT_INLINE_BYTES = 256 * 1024;

/** The reference that stands for a result stored in `{ns}_results`. */
export const ResultRefSchema = z.strictObject({
  $ref: z.string().min(1).max(256),
  bytes: z.number().int().positive(),
  sha256: z.string().regex(/^[0-9a-f]{64}$/, "sha256 is 64 lower-case hex digits"),
});
export type ResultRef = z.infer<typeof ResultRefSchema>;

/** True when a `result` is a reference rather than the result itself. */
export function isResultRef(result: unknown): result is ResultRef {
  if (result === null || typeof result !== "object" || !("$ref" in result)) return false;
  return ResultRefSchema.safeParse(result).success;
}

/**
 * Who wrote an object: the provider of one remote tool, or the tool-executor (a result it made
 * itself: a built-in's, or one a wrapper changed). Each writer has its own chunk subjects, so the
 * per-role NATS users can let each write its own and nothing else.
 */
export type ResultWriter = { tool: string } | "tool-executor";

const PLAIN_TOKEN = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * A tool name as one subject token: as it is when made of `[A-Za-z0-9_-]`, else `=` + the
 * base64url of its bytes (`fs.write` → `=ZnMud3JpdGU`); `=` never starts a plain token.
 */
export function toolSubjectToken(tool: string): string {
  return PLAIN_TOKEN.test(tool) ? tool : `=${Buffer.from(tool, "utf8").toString("base64url")}`;
}

/**
 * The chunk subjects of a writer, below which each object has one more token (its nuid):
 * `$O.{ns}_results.C.tool.{tool token}` for a tool provider, `$O.{ns}_results.C.executor` for the
 * tool-executor. The object's ObjectInfo `nuid` is the part after `C.`.
 */
export function resultChunkPrefix(n: Names, writer: ResultWriter): string {
  const owner = writer === "tool-executor" ? "executor" : `tool.${toolSubjectToken(writer.tool)}`;
  return `$O.${n.resultStore}.C.${owner}`;
}

/** The meta subject of an object, as every Object Store client names it (padded base64url). */
export function resultMetaSubject(n: Names, objectName: string): string {
  const b64 = Buffer.from(objectName, "utf8").toString("base64").replaceAll("+", "-").replaceAll("/", "_");
  return `$O.${n.resultStore}.M.${b64}`;
}

/**
 * An object's metadata as the Object Store keeps it on its meta subject (`ObjectInfo` of
 * `@nats-io/obj` and the Go client): the fields a reader relies on; others pass through.
 */
export const ObjectInfoSchema = z.looseObject({
  name: z.string(),
  bucket: z.string(),
  nuid: z.string(),
  size: z.number().int().min(0),
  chunks: z.number().int().min(0),
  digest: z.string(),
  deleted: z.boolean().optional(),
  options: z.looseObject({ link: z.unknown().optional() }).optional(),
});
export type ObjectInfo = z.infer<typeof ObjectInfoSchema>;

/** The `tool_result_offloaded` event's payload: one leg on which a result travelled by reference. */
export const ToolResultOffloadedSchema = z.strictObject({
  tool_name: z.string(),
  /** `terminal`: the provider's reply to the executor; `reply`: the executor's reply to its caller. */
  leg: z.enum(["terminal", "reply"]),
  object: z.string(),
  bytes: z.number().int().positive(),
  sha256: z.string(),
});
export type ToolResultOffloaded = z.infer<typeof ToolResultOffloadedSchema>;

/**
 * A reply whose result reference no longer resolves (the object outlived its TTL in
 * `{ns}_results`, or is not what the reference says): an error result that says so and keeps the
 * reference, and the status it had. The operation is not run again: a replay stays a replay.
 */
export function unresolvedResultReply(
  reply: ToolExecuteReply,
  ref: ResultRef,
  why: string,
): ToolExecuteReply {
  const message = `the result of this call (${ref.bytes} bytes, ${ref.$ref}) cannot be read: ${why}; the operation is not run again`;
  return {
    ...reply,
    result: { error: message, result_ref: ref },
    has_error: true,
    reason: [reply.reason, message].filter((t) => t !== "").join("; "),
  };
}
