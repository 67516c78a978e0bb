import { describe, expect, it } from "vitest";
import { UsageMeter } from "./usage-meter.js";

const sse = (events: unknown[]) => events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join("");

/** Feeds `text` to a meter in pieces of `size` bytes. */
function meter(
  kind: "openai" | "anthropic" | "gemini",
  text: string,
  size: number,
  type = "text/event-stream",
) {
  const m = new UsageMeter(kind, type);
  const bytes = Buffer.from(text);
  for (let i = 0; i < bytes.length; i += size) m.push(bytes.subarray(i, i + size));
  m.end();
  return m;
}

describe("UsageMeter", () => {
  const responses = sse([
    { type: "response.output_text.delta", delta: "hello ".repeat(50) },
    {
      type: "response.completed",
      response: {
        usage: { input_tokens: 30, input_tokens_details: { cached_tokens: 10 }, output_tokens: 7 },
      },
    },
  ]);

  it("reads streamed usage whatever the chunking, a usage line split across chunks included", () => {
    for (const size of [1, 7, 64, 100_000]) {
      const m = meter("openai", responses, size);
      expect(m.seen, `chunks of ${size}`).toBe(true);
      expect(m.usage).toEqual({ input_tokens: 30, cached_input_tokens: 10, output_tokens: 7 });
    }
  });

  it("sums Anthropic's message_start and message_delta, cached input inside input", () => {
    const m = meter(
      "anthropic",
      sse([
        {
          type: "message_start",
          message: {
            usage: {
              input_tokens: 5,
              cache_read_input_tokens: 100,
              cache_creation_input_tokens: 3,
              output_tokens: 1,
            },
          },
        },
        { type: "message_delta", usage: { output_tokens: 42 } },
      ]),
      13,
    );
    expect(m.usage).toEqual({ input_tokens: 108, cached_input_tokens: 100, output_tokens: 42 });
  });

  it("reads a JSON answer at its end (Gemini's array form too), and nothing from garbage", () => {
    const gemini = JSON.stringify([
      { usageMetadata: { promptTokenCount: 9, candidatesTokenCount: 4, thoughtsTokenCount: 2 } },
    ]);
    expect(meter("gemini", gemini, 5, "application/json").usage).toEqual({
      input_tokens: 9,
      cached_input_tokens: 0,
      output_tokens: 6,
    });
    const garbage = meter("openai", "<html>usage</html>", 3, "application/json");
    expect(garbage.seen).toBe(false);
  });

  it("skips a line over the bound and reads the lines after it", () => {
    const long = `data: ${"u".repeat(1024 * 1024 + 10)}sage\n\n`;
    const m = meter("openai", long + sse([{ usage: { prompt_tokens: 3, completion_tokens: 2 } }]), 64 * 1024);
    expect(m.usage).toEqual({ input_tokens: 3, cached_input_tokens: 0, output_tokens: 2 });
  });

  it("reads usage split at any byte, among lines that only mention it in their text", () => {
    const text = sse([
      { type: "response.output_text.delta", delta: 'the "usage field' },
      { type: "response.output_text.delta", delta: "x".repeat(3000) },
      { type: "response.completed", response: { usage: { input_tokens: 4, output_tokens: 2 } } },
      { type: "response.output_text.delta", delta: "after" },
    ]).replace(/\n\n/g, "\r\n\r\n");
    const bytes = Buffer.from(text);
    for (let cut = 0; cut <= bytes.length; cut += 7) {
      const m = new UsageMeter("openai", "text/event-stream");
      m.push(bytes.subarray(0, cut));
      m.push(bytes.subarray(cut));
      m.end();
      expect(m.usage, `cut at ${cut}`).toEqual({ input_tokens: 4, cached_input_tokens: 0, output_tokens: 2 });
    }
  });

  it("reads a last usage line that has no newline, and skips an over-long line fed byte by byte", () => {
    const last = meter("anthropic", `data: ${JSON.stringify({ usage: { output_tokens: 9 } })}`, 5);
    expect(last.usage.output_tokens).toBe(9);
    const long = `data: {"usage": "${"u".repeat(1024 * 1024 + 10)}"}\n`;
    const m = meter("openai", long + sse([{ usage: { prompt_tokens: 1, completion_tokens: 1 } }]), 4096);
    expect(m.usage).toEqual({ input_tokens: 1, cached_input_tokens: 0, output_tokens: 1 });
  });
});
