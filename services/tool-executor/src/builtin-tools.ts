import { mkdir, readFile, realpath, writeFile } from "node:fs/promises";
import path from "node:path";
import type { ToolDefinition } from "@geode/contracts";
import type { ToolCallResult } from "@geode/middleware";

/** An in-process tool: its definition and its terminal. */
export interface BuiltinTool {
  definition: ToolDefinition;
  run(args: Record<string, unknown>, context: { signal: AbortSignal }): Promise<ToolCallResult>;
}

const MAX_READ_BYTES = 256 * 1024;

const errorResult = (message: string): ToolCallResult => ({ result: { error: message }, has_error: true });

/**
 * Resolves `relative` inside `root`, refusing anything that escapes it (`..`, absolute paths, or a
 * symlink pointing outside).
 */
async function confine(root: string, relative: unknown): Promise<string | null> {
  if (typeof relative !== "string" || relative === "" || path.isAbsolute(relative)) return null;
  const target = path.resolve(root, relative);
  if (target !== root && !target.startsWith(root + path.sep)) return null;
  await mkdir(root, { recursive: true });
  const realRoot = await realpath(root);
  // The deepest existing ancestor must still be inside the root once symlinks are resolved.
  let probe = target;
  for (;;) {
    try {
      const real = await realpath(probe);
      if (real !== realRoot && !real.startsWith(realRoot + path.sep)) return null;
      return target;
    } catch {
      const parent = path.dirname(probe);
      if (parent === probe) return null;
      probe = parent;
    }
  }
}

/** The built-in tools: `echo`, `clock.now`, and `fs.read` / `fs.write` confined to `root`. */
export function builtinTools(root: string): BuiltinTool[] {
  return [
    {
      definition: {
        name: "echo",
        description: "Returns its arguments unchanged.",
        input_schema: { type: "object" },
        effect: "read",
        requires_approval: false,
      },
      async run(args) {
        return { result: { ...args }, has_error: false };
      },
    },
    {
      definition: {
        name: "clock.now",
        description: "The current time as epoch milliseconds and ISO 8601.",
        input_schema: { type: "object", properties: {}, additionalProperties: false },
        effect: "read",
        requires_approval: false,
      },
      async run() {
        const now = Date.now();
        return { result: { epoch_ms: now, iso: new Date(now).toISOString() }, has_error: false };
      },
    },
    {
      definition: {
        name: "fs.read",
        description: "Reads a UTF-8 text file under the tool folder.",
        input_schema: {
          type: "object",
          properties: { path: { type: "string", minLength: 1 } },
          required: ["path"],
          additionalProperties: false,
        },
        effect: "read",
        requires_approval: false,
      },
      async run(args) {
        const file = await confine(root, args["path"]);
        if (!file) return errorResult("path escapes the tool folder");
        try {
          const buf = await readFile(file);
          if (buf.length > MAX_READ_BYTES) return errorResult(`file is larger than ${MAX_READ_BYTES} bytes`);
          return { result: { path: args["path"], content: buf.toString("utf8") }, has_error: false };
        } catch (err) {
          return errorResult((err as NodeJS.ErrnoException).code ?? "read failed");
        }
      },
    },
    {
      definition: {
        name: "fs.write",
        description: "Writes a UTF-8 text file under the tool folder (creates folders as needed).",
        input_schema: {
          type: "object",
          properties: { path: { type: "string", minLength: 1 }, content: { type: "string" } },
          required: ["path", "content"],
          additionalProperties: false,
        },
        effect: "mutation",
        requires_approval: false,
      },
      async run(args) {
        const file = await confine(root, args["path"]);
        if (!file) return errorResult("path escapes the tool folder");
        const content = String(args["content"]);
        await mkdir(path.dirname(file), { recursive: true });
        await writeFile(file, content, "utf8");
        return { result: { path: args["path"], bytes: Buffer.byteLength(content) }, has_error: false };
      },
    },
  ];
}
