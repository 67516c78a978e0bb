import { describe, expect, it } from "vitest";
import { ToolCalls } from "./tool-calls.js";

const S = "session-1";
const rm = { command: "rm -rf precious" };
const ls = { command: "ls" };

describe("ToolCalls: calls of agents that name none", () => {
  it("give PreToolUse an id that the result of the same call finds, by session, tool and arguments", () => {
    const calls = new ToolCalls();
    const id = calls.announce(S, "bash", "", ls);
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-/);
    expect(calls.idOf(S, "bash", ls)).toBe(id);
    expect(calls.finish(S, "bash", "", { ...ls })).toEqual({ toolCallId: id, announced: true });
    // Another session, tool or input is another call.
    expect(calls.idOf("session-2", "bash", ls)).toBe("");
    expect(calls.idOf(S, "shell", ls)).toBe("");
  });

  it("derive the same id on every replica for the same first call, another for the next one", () => {
    const a = new ToolCalls();
    const b = new ToolCalls();
    const first = a.announce(S, "bash", "", ls);
    expect(b.announce(S, "bash", "", ls)).toBe(first);
    const second = a.announce(S, "bash", "", ls);
    expect(second).not.toBe(first);
  });

  it("match results in order: the oldest waiting call of the same input first", () => {
    const calls = new ToolCalls();
    const first = calls.announce(S, "bash", "", ls);
    const second = calls.announce(S, "bash", "", ls);
    expect(calls.finish(S, "bash", "", ls).toolCallId).toBe(first);
    expect(calls.finish(S, "bash", "", ls).toolCallId).toBe(second);
    // A third result of that input had no PreToolUse: a gap.
    expect(calls.finish(S, "bash", "", ls)).toEqual({ toolCallId: "", announced: false });
  });

  it("match a permission prompt that names only some of the call's arguments (Copilot's toolInput)", () => {
    const calls = new ToolCalls();
    const full = { command: "touch harmless.txt", description: "run", mode: "sync" };
    const other = calls.announce(S, "bash", "", { ...full, command: "ls" });
    const id = calls.announce(S, "bash", "", full);
    expect(id).not.toBe(other);
    expect(calls.idOf(S, "bash", { command: "touch harmless.txt" })).toBe(id);
    expect(calls.idOf(S, "bash", { command: "touch other.txt" })).toBe("");
    expect(calls.idOf(S, "bash", {})).toBe("");
    // A result is matched by its whole input only.
    expect(calls.finish(S, "bash", "", { command: "touch harmless.txt" }).announced).toBe(false);
    expect(calls.finish(S, "bash", "", full)).toEqual({ toolCallId: id, announced: true });
  });

  it("never match a result to a refused call", () => {
    const calls = new ToolCalls();
    const blocked = calls.announce(S, "bash", "", rm);
    calls.refused(S, blocked);
    const ran = calls.announce(S, "bash", "", rm);
    expect(calls.idOf(S, "bash", rm)).toBe(ran);
    expect(calls.finish(S, "bash", "", rm).toolCallId).toBe(ran);
  });

  it("find a rewritten call by its rewritten input as well as its original", () => {
    const calls = new ToolCalls();
    const id = calls.announce(S, "bash", "", rm);
    calls.remember(S, id, { command: "echo no" }, true);
    expect(calls.rewritten(S, id)).toBe(true);
    expect(calls.finish(S, "bash", "", { command: "echo no" }).toolCallId).toBe(id);
    expect(calls.idOf(S, "bash", rm)).toBe("");
  });
});

describe("ToolCalls: calls the agent names", () => {
  it("keep the agent's id, and tell a result without PreToolUse from one with it", () => {
    const calls = new ToolCalls();
    expect(calls.announce(S, "Bash", "toolu_1", ls)).toBe("toolu_1");
    expect(calls.finish(S, "Bash", "toolu_1", ls)).toEqual({ toolCallId: "toolu_1", announced: true });
    expect(calls.finish(S, "Bash", "toolu_2", ls)).toEqual({ toolCallId: "toolu_2", announced: false });
  });

  it("forget calls past their time to live", () => {
    const calls = new ToolCalls(-1);
    calls.announce(S, "Bash", "toolu_1", ls);
    expect(calls.finish(S, "Bash", "toolu_1", ls).announced).toBe(false);
  });
});
