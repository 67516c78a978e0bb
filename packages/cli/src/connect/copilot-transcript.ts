// Loaded by the hook shim on Copilot's agentStop: node:fs only.
import { closeSync, fstatSync, openSync, readSync } from "node:fs";

/** How much of the transcript's end is read: the last answer sits near it. */
const TAIL_BYTES = 4 * 1024 * 1024;

/**
 * The text of the last `assistant.message` with content in a Copilot CLI transcript
 * (`events.jsonl`, one event a line), or undefined when there is none or the file cannot be read.
 */
function lastAssistantMessage(file: string): string | undefined {
  let text: string;
  try {
    const fd = openSync(file, "r");
    try {
      const size = fstatSync(fd).size;
      const length = Math.min(size, TAIL_BYTES);
      const buf = Buffer.alloc(length);
      readSync(fd, buf, 0, length, size - length);
      text = buf.toString("utf8");
    } finally {
      closeSync(fd);
    }
  } catch {
    return undefined;
  }
  const lines = text.split("\n");
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = lines[i] as string;
    if (!line.includes('"assistant.message"')) continue;
    try {
      const event = JSON.parse(line) as { type?: unknown; data?: { content?: unknown } };
      const content = event.data?.content;
      if (event.type === "assistant.message" && typeof content === "string" && content.trim() !== "")
        return content;
    } catch {
      // a line cut by the tail window, or not JSON
    }
  }
  return undefined;
}

/**
 * Copilot's agentStop input with the answer the verifier needs: `lastAssistantMessage` from the
 * transcript it points to; the transcript's path itself is not sent on. Other input is unchanged.
 */
export function withAnswerText(input: Buffer): Buffer {
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(input.toString("utf8")) as Record<string, unknown>;
  } catch {
    return input;
  }
  const transcript = body["transcriptPath"];
  if (typeof transcript !== "string" || body["lastAssistantMessage"] !== undefined) return input;
  const { transcriptPath: _, ...rest } = body;
  const text = lastAssistantMessage(transcript);
  return Buffer.from(JSON.stringify(text === undefined ? rest : { ...rest, lastAssistantMessage: text }));
}
