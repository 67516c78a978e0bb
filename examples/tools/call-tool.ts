/**
 * Calls a tool through the tool-executor: `pnpm tsx examples/tools/call-tool.ts "a note"`.
 * Run it twice with the same `tool_call_id` and the second reply is `replayed`.
 */
import { connectGeode, createToolClient } from "@geode/runtime";

const conn = await connectGeode({ name: "notes-caller" });
try {
  const reply = await createToolClient(conn).execute({
    tool_name: "notes.append",
    arguments: { text: process.argv[2] ?? "hello from the example" },
    correlation: { session_id: "example-session", tool_call_id: process.argv[3] ?? "call-1" },
  });
  process.stdout.write(`${JSON.stringify(reply, null, 2)}\n`);
} finally {
  await conn.close();
}
