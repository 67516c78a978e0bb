// Loaded by the hook shim on Copilot's agentStop: node:fs only.
import { closeSync, fstatSync, openSync, readSync } from "node:fs";

/** How much of the transcript's end is read: the last answer sits near it. */
const TAIL_BYTES = 4 * 1024 * 1024;
/** How long the shim waits for Copilot to write this stop into its transcript (it writes it soon after). */
const WAIT_MS = 3_000;
const POLL_MS = 25;

function tail(file: string): string | undefined {
  try {
    const fd = openSync(file, "r");
    try {
      const size = fstatSync(fd).size;
      const length = Math.min(size, TAIL_BYTES);
      const buf = Buffer.alloc(length);
      readSync(fd, buf, 0, length, size - length);
      return buf.toString("utf8");
    } finally {
      closeSync(fd);
    }
  } catch {
    return undefined;
  }
}

function parse(line: string): { type?: unknown; data?: Record<string, unknown> } | undefined {
  try {
    return JSON.parse(line) as { type?: unknown; data?: Record<string, unknown> };
  } catch {
    return undefined; // a line cut by the tail window, or not JSON
  }
}

/** Whether a transcript line is the `hook.start` of the agentStop whose input had `timestamp`. */
function isThisStop(line: string, timestamp: number): boolean {
  if (!line.includes('"agentStop"') || !line.includes(String(timestamp))) return false;
  const event = parse(line);
  const input = event?.data?.["input"] as { timestamp?: unknown } | undefined;
  return (
    event?.type === "hook.start" && event.data?.["hookType"] === "agentStop" && input?.timestamp === timestamp
  );
}

/**
 * The answer a stop ends: the last `assistant.message` with content before this agentStop's own
 * `hook.start` line (found by the input's `timestamp`), so an earlier turn's answer is never taken
 * for this one's. Without a timestamp (or when `any`), the transcript's last answer. Undefined
 * while the transcript does not hold it yet.
 */
function answerOf(file: string, timestamp: number | undefined, any: boolean): string | undefined {
  const text = tail(file);
  if (text === undefined) return undefined;
  const lines = text.split("\n");
  let end = lines.length;
  if (timestamp !== undefined && !any) {
    end = lines.findLastIndex((l) => isThisStop(l, timestamp));
    if (end < 0) return undefined;
  }
  for (let i = end - 1; i >= 0; i--) {
    const line = lines[i] as string;
    if (!line.includes('"assistant.message"')) continue;
    const event = parse(line);
    const content = event?.data?.["content"];
    if (event?.type === "assistant.message" && typeof content === "string" && content.trim() !== "")
      return content;
  }
  return undefined;
}

/**
 * Copilot's agentStop input with the answer the verifier needs: `lastAssistantMessage` from the
 * transcript it points to; the transcript's path itself is not sent on. Copilot writes the stop
 * into its transcript a little after it runs the hook, so this waits (up to `waitMs`) for the
 * stop's own line, then takes the answer before it; after the wait, the transcript's last answer,
 * if any. Other input is unchanged.
 */
export async function withAnswerText(input: Buffer, waitMs = WAIT_MS): Promise<Buffer> {
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(input.toString("utf8")) as Record<string, unknown>;
  } catch {
    return input;
  }
  const transcript = body["transcriptPath"];
  if (typeof transcript !== "string" || body["lastAssistantMessage"] !== undefined) return input;
  const { transcriptPath: _, ...rest } = body;
  const timestamp = typeof body["timestamp"] === "number" ? body["timestamp"] : undefined;
  const deadline = Date.now() + waitMs;
  let text = answerOf(transcript, timestamp, false);
  while (text === undefined && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, POLL_MS));
    text = answerOf(transcript, timestamp, false);
  }
  text ??= answerOf(transcript, timestamp, true);
  return Buffer.from(JSON.stringify(text === undefined ? rest : { ...rest, lastAssistantMessage: text }));
}
