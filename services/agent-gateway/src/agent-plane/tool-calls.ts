import { sha256 } from "@geode/contracts";

interface Call {
  toolCallId: string;
  rewritten: boolean;
  started: boolean;
  at: number;
}

/** A name-based id in UUID form: the same parts always give the same id. */
export function derivedId(...parts: string[]): string {
  const h = sha256(parts.join("\u0000"));
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

/**
 * What the gateway remembers of an agent's tool calls between that call's hook requests, for a
 * few minutes and on this replica only: the call's id (agents name it in PreToolUse and in the
 * result events, not in their permission prompt) and whether `tool_exec_started` was recorded.
 * What it forgets costs nothing but precision: the records of a call carry deterministic ids, so
 * a second replica that records the same start again is stored once.
 */
export class ToolCalls {
  private readonly byArgs = new Map<string, Call>();
  private readonly byId = new Map<string, Call>();

  constructor(
    private readonly ttlMs = 10 * 60_000,
    private readonly max = 10_000,
  ) {}

  /** PreToolUse: the call `toolCallId` of `toolName` runs with `args` (what the agent will ask permission for). */
  remember(
    sessionId: string,
    toolName: string,
    toolCallId: string,
    args: ReadonlyArray<Record<string, unknown>>,
    rewritten: boolean,
  ): void {
    if (toolCallId === "") return;
    const call: Call = { toolCallId, rewritten, started: false, at: Date.now() };
    this.put(this.byId, `${sessionId}\u0000${toolCallId}`, call);
    for (const a of args) this.put(this.byArgs, argsKey(sessionId, toolName, a), call);
  }

  /** The id of the latest call of `toolName` with `args` in the session, or "" when unknown. */
  idOf(sessionId: string, toolName: string, args: Record<string, unknown>): string {
    return this.live(this.byArgs.get(argsKey(sessionId, toolName, args)))?.toolCallId ?? "";
  }

  /** Whether PreToolUse rewrote the call (false when unknown). */
  rewritten(sessionId: string, toolCallId: string): boolean {
    return this.live(this.byId.get(`${sessionId}\u0000${toolCallId}`))?.rewritten ?? false;
  }

  /** Marks the call started; true the first time (on this replica). */
  start(sessionId: string, toolCallId: string): boolean {
    const key = `${sessionId}\u0000${toolCallId}`;
    const call = this.live(this.byId.get(key));
    if (call?.started) return false;
    if (call) call.started = true;
    else this.put(this.byId, key, { toolCallId, rewritten: false, started: true, at: Date.now() });
    return true;
  }

  private live(call: Call | undefined): Call | undefined {
    return call && Date.now() - call.at < this.ttlMs ? call : undefined;
  }

  private put(map: Map<string, Call>, key: string, call: Call): void {
    map.delete(key);
    if (map.size >= this.max) {
      const oldest = map.keys().next().value;
      if (oldest !== undefined) map.delete(oldest);
    }
    map.set(key, call);
  }
}

function argsKey(sessionId: string, toolName: string, args: Record<string, unknown>): string {
  return `${sessionId}\u0000${toolName}\u0000${sha256(args)}`;
}
