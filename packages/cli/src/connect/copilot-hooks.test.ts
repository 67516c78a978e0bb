import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { COPILOT_EVENTS } from "@geode/contracts";
import { afterAll, describe, expect, it } from "vitest";
import { copilotHooks, eventUrl, folderTrusted, hooksDisabledBy, hooksFileProblem } from "./copilot-hooks.js";
import { withAnswerText } from "./copilot-transcript.js";

const dir = mkdtempSync(path.join(tmpdir(), "geode-copilot-hooks-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const endpoint = "http://127.0.0.1:4280/v1/copilot/hook";
const hooks = (failClosed: boolean) =>
  copilotHooks({
    endpoint,
    approvalTimeoutMs: 60_000,
    failClosed,
    shim: (url) => `geode hook-shim --url '${url}'`,
  });

describe("the hooks geode connect copilot writes", () => {
  it("gives every Copilot event one native command hook that names its event in the URL", () => {
    const file = hooks(false);
    expect(file.version).toBe(1);
    expect(Object.keys(file.hooks)).toEqual(COPILOT_EVENTS.map((e) => e.event));
    for (const e of COPILOT_EVENTS) {
      const [hook] = file.hooks[e.event] ?? [];
      expect(hook?.type).toBe("command");
      expect(hook?.bash).toContain(`'${eventUrl(endpoint, e.event)}'`);
    }
    expect(file.hooks["agentStop"]?.[0]?.bash).toMatch(/^geode hook-shim/);
  });

  it("never leaves a fail-closed guard to Copilot's timeout: curl gives up first, then refusal JSON and exit 2", () => {
    const closed = hooks(true);
    for (const e of COPILOT_EVENTS) {
      const [hook] = closed.hooks[e.event] ?? [];
      const maxTime = Number(/--max-time (\d+)/.exec(hook?.bash ?? "")?.[1] ?? 0);
      if (e.event !== "agentStop") expect(hook?.timeoutSec, e.event).toBe(maxTime + 5);
      if (e.guards) {
        expect(hook?.bash, e.event).toMatch(/; echo '\{"[a-zA-Z]+":"(deny|block)".*';; esac; exit 2; \}$/);
        // A refused token and an unreachable gateway each have their own refusal.
        expect(hook?.bash, e.event).toContain("the gateway refused the agent token (401)");
        expect(hook?.bash, e.event).toContain("the agent gateway could not answer");
      } else expect(hook?.bash, e.event).not.toContain("exit 2");
    }
    // Without --fail-closed, "go on" is exit 0 with nothing printed: Copilot reads exit 1 as a refusal.
    for (const [event, [hook]] of Object.entries(hooks(false).hooks))
      if (event !== "agentStop") expect(hook?.bash, event).toMatch(/>&2;; esac; exit 0; \}$/);
  });
});

describe("geode connect copilot --check's readings", () => {
  it("names a file that is not JSON, not version 1, or misses an event", () => {
    const file = path.join(dir, "hooks.json");
    writeFileSync(file, "{");
    expect(hooksFileProblem(file, endpoint)).toMatch(/not valid JSON/);
    writeFileSync(file, JSON.stringify({ hooks: {} }));
    expect(hooksFileProblem(file, endpoint)).toMatch(/"version": 1/);
    const { agentStop: _, ...rest } = hooks(false).hooks;
    writeFileSync(file, JSON.stringify({ version: 1, hooks: rest }));
    expect(hooksFileProblem(file, endpoint)).toMatch(/no hook that sends agentStop/);
    writeFileSync(file, JSON.stringify(hooks(false)));
    expect(hooksFileProblem(file, endpoint)).toBeNull();
    expect(hooksFileProblem(file, "http://127.0.0.1:9999/v1/copilot/hook")).toMatch(/no hook that sends/);
  });

  it("reads folder trust and disableAllHooks from Copilot's folder (config.json with its comment lines)", () => {
    const home = path.join(dir, "home");
    mkdirSync(path.join(home, ".copilot"), { recursive: true });
    const env = { HOME: home };
    expect(folderTrusted("/src/app", env)).toBe(false);
    writeFileSync(
      path.join(home, ".copilot/config.json"),
      `// managed by Copilot\n${JSON.stringify({ trustedFolders: ["/src"] })}`,
    );
    expect(folderTrusted("/src/app", env)).toBe(true);
    expect(folderTrusted("/srcx", env)).toBe(false);
    expect(folderTrusted("/elsewhere", { ...env, COPILOT_ALLOW_ALL: "true" })).toBe(true);
    expect(hooksDisabledBy(env)).toBeNull();
    writeFileSync(path.join(home, ".copilot/settings.json"), JSON.stringify({ disableAllHooks: true }));
    expect(hooksDisabledBy(env)).toBe(path.join(home, ".copilot/settings.json"));
  });
});

describe("agentStop's answer text", () => {
  const line = (type: string, content: string) => JSON.stringify({ type, data: { content } });
  const stop = (timestamp: number) =>
    JSON.stringify({ type: "hook.start", data: { hookType: "agentStop", input: { timestamp } } });
  const answer = async (input: Record<string, unknown>, waitMs?: number) =>
    JSON.parse((await withAnswerText(Buffer.from(JSON.stringify(input)), waitMs)).toString());

  it("comes from the transcript's last assistant message with content; the path is not sent on", async () => {
    const transcript = path.join(dir, "events.jsonl");
    writeFileSync(
      transcript,
      [
        line("assistant.message", "first"),
        line("assistant.message", "the answer"),
        line("assistant.message", ""),
        line("assistant.turn_end", "x"),
      ].join("\n"),
    );
    const input = { sessionId: "s", stopReason: "end_turn", transcriptPath: transcript };
    expect(await answer(input)).toEqual({
      sessionId: "s",
      stopReason: "end_turn",
      lastAssistantMessage: "the answer",
    });
    const missing = { ...input, transcriptPath: path.join(dir, "nope.jsonl") };
    expect(await answer(missing, 100)).toEqual({ sessionId: "s", stopReason: "end_turn" });
  });

  it("waits for Copilot to write this stop, and takes the answer before it, not an earlier turn's", async () => {
    const transcript = path.join(dir, "turns.jsonl");
    // Turn one is written; this stop (timestamp 2000) ends turn two, written a moment after the hook runs.
    writeFileSync(transcript, [line("assistant.message", "One."), stop(1000)].join("\n"));
    const input = { sessionId: "s", timestamp: 2000, transcriptPath: transcript };
    const later = setTimeout(
      () =>
        writeFileSync(
          transcript,
          [line("assistant.message", "One."), stop(1000), line("assistant.message", "Two."), stop(2000)].join(
            "\n",
          ),
        ),
      150,
    );
    try {
      expect((await answer(input)).lastAssistantMessage).toBe("Two.");
    } finally {
      clearTimeout(later);
    }
    // A stop that never shows up: after the wait, the transcript's last answer.
    expect((await answer({ ...input, timestamp: 3000 }, 100)).lastAssistantMessage).toBe("Two.");
  });
});
