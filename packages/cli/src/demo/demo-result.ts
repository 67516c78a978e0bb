import { HookNameSchema, ToolExecuteReplySchema, VerifyReplySchema } from "@geode/contracts";
import { z } from "zod";

/**
 * What the demo's runtime process (`examples/demo/session.ts`) reports on the last line of its
 * stdout, after `RESULT_PREFIX`: checked here like any message from another process.
 */
const DemoSessionResultSchema = z.object({
  runId: z.string(),
  sessionId: z.string(),
  steps: z.array(z.object({ what: z.string(), outcome: z.string() })),
  write: ToolExecuteReplySchema,
  retry: ToolExecuteReplySchema,
  blocked: ToolExecuteReplySchema,
  read: ToolExecuteReplySchema,
  verifications: z.array(VerifyReplySchema),
  ended: z.object({ ended: z.boolean(), hookError: z.string().nullable() }),
  llmCalls: z.number().int(),
  invokedByRuntime: z.array(HookNameSchema),
});
export type DemoSessionResult = z.infer<typeof DemoSessionResultSchema>;

/** The prefix of the result line (see `examples/demo/session.ts`). */
const RESULT_PREFIX = "demo-result ";

/** The result in a session process's stdout, or an error naming what is wrong. */
export function parseDemoResult(stdout: string): DemoSessionResult {
  const line = stdout
    .split("\n")
    .reverse()
    .find((l) => l.startsWith(RESULT_PREFIX));
  if (line === undefined) throw new Error("the demo session printed no result");
  return DemoSessionResultSchema.parse(JSON.parse(line.slice(RESULT_PREFIX.length)));
}
