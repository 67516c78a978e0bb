import { sha256 } from "@geode/contracts";

interface Call {
  toolCallId: string;
  rewritten: boolean;
  started: boolean;
  /** The result was reported, or the call was refused: no later event of the call is expected. */
  done: boolean;
  at: number;
  /** The digests of the inputs the call may be reported with (as announced, as rewritten). */
  inputs: string[];
  /** Per input, the digest of each top-level argument (a permission prompt may name only some). */
  fields: Array<Map<string, string>>;
}

/** A name-based id in UUID form: the same parts always give the same id. */
export function derivedId(...parts: string[]): string {
  const h = sha256(parts.join("\u0000"));
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

/** What `finish` knows of a call whose result the agent reports. */
interface FinishedCall {
  /** The call's id: the agent's, else the one PreToolUse gave it; "" when PreToolUse never named it. */
  toolCallId: string;
  /** Whether PreToolUse of this call reached this replica. */
  announced: boolean;
}

/** Calls of one tool in one session waiting for their result, at most this many. */
const MAX_WAITING = 64;

/**
 * What the gateway remembers of an agent's tool calls between that call's hook requests, for an
 * hour and on this replica only: the call's id, whether PreToolUse announced it, whether
 * `tool_exec_started` was recorded. Agents that name no call (Gemini CLI, Copilot CLI) get an id
 * at PreToolUse, derived from the session, the tool, the arguments and how many such calls came
 * before; their permission prompt and result are matched to it by session, tool and arguments, the
 * oldest waiting call first. What it forgets costs precision only: the records of a call carry
 * deterministic ids, so a second replica that records the same start again is stored once, and a
 * result it cannot match is reported as a governance gap.
 */
export class ToolCalls {
  private readonly waiting = new Map<string, Call[]>();
  private readonly byId = new Map<string, Call>();
  private readonly ordinals = new Map<string, number>();

  constructor(
    private readonly ttlMs = 60 * 60_000,
    private readonly max = 10_000,
  ) {}

  /**
   * PreToolUse of `toolName` with `args` is on its way to the handlers: the call is remembered as
   * announced, under the agent's id or (`toolCallId` "") one derived here, which it returns.
   */
  announce(sessionId: string, toolName: string, toolCallId: string, args: Record<string, unknown>): string {
    const digest = sha256(args);
    let id = toolCallId;
    if (id === "") {
      const key = `${sessionId}\u0000${toolName}\u0000${digest}`;
      const n = (this.ordinals.get(key) ?? 0) + 1;
      this.bounded(this.ordinals, key, n);
      id = derivedId(sessionId, toolName, digest, String(n));
    }
    const call: Call = {
      toolCallId: id,
      rewritten: false,
      started: false,
      done: false,
      at: Date.now(),
      inputs: [digest],
      fields: [fieldDigests(args)],
    };
    this.bounded(this.byId, idKey(sessionId, id), call);
    const calls = this.waiting.get(toolKey(sessionId, toolName)) ?? [];
    calls.push(call);
    if (calls.length > MAX_WAITING) calls.shift();
    this.bounded(this.waiting, toolKey(sessionId, toolName), calls);
    return id;
  }

  /** PreToolUse let the call go with `args` (rewritten or not): its result may name either input. */
  remember(sessionId: string, toolCallId: string, args: Record<string, unknown>, rewritten: boolean): void {
    const call = this.live(this.byId.get(idKey(sessionId, toolCallId)));
    if (!call) return;
    call.rewritten = rewritten;
    if (rewritten) {
      call.inputs.push(sha256(args));
      call.fields.push(fieldDigests(args));
    }
  }

  /**
   * The id of the oldest call of `toolName` still waiting in the session with `args` as its
   * input, else with `args` among its arguments (Copilot's permission prompt names only the
   * command of its call); "" when none.
   */
  idOf(sessionId: string, toolName: string, args: Record<string, unknown>): string {
    const digest = sha256(args);
    const named = fieldDigests(args);
    const within = (fields: Map<string, string>) =>
      named.size > 0 && [...named].every(([k, d]) => fields.get(k) === d);
    return (
      (
        this.oldest(sessionId, toolName, (c) => c.inputs.includes(digest)) ??
        this.oldest(sessionId, toolName, (c) => c.fields.some(within))
      )?.toolCallId ?? ""
    );
  }

  /** The call was refused (blocked or denied): it never runs, so no result is matched to it. */
  refused(sessionId: string, toolCallId: string): void {
    const call = this.byId.get(idKey(sessionId, toolCallId));
    if (call) call.done = true;
  }

  /**
   * The agent reports the result of a call (`toolCallId` as the agent named it, "" when it names
   * none): the call it belongs to, and whether its PreToolUse was seen here.
   */
  finish(
    sessionId: string,
    toolName: string,
    toolCallId: string,
    args: Record<string, unknown>,
  ): FinishedCall {
    const digest = sha256(args);
    const call =
      toolCallId === ""
        ? this.oldest(sessionId, toolName, (c) => c.inputs.includes(digest))
        : this.live(this.byId.get(idKey(sessionId, toolCallId)));
    if (!call) return { toolCallId, announced: false };
    call.done = true;
    return { toolCallId: call.toolCallId, announced: true };
  }

  /** Whether PreToolUse rewrote the call (false when unknown). */
  rewritten(sessionId: string, toolCallId: string): boolean {
    return this.live(this.byId.get(idKey(sessionId, toolCallId)))?.rewritten ?? false;
  }

  /** Marks the call started; true the first time (on this replica). */
  start(sessionId: string, toolCallId: string): boolean {
    const key = idKey(sessionId, toolCallId);
    const call = this.live(this.byId.get(key));
    if (call?.started) return false;
    if (call) call.started = true;
    else
      this.bounded(this.byId, key, {
        toolCallId,
        rewritten: false,
        started: true,
        done: false,
        at: Date.now(),
        inputs: [],
        fields: [],
      });
    return true;
  }

  private live(call: Call | undefined): Call | undefined {
    return call && Date.now() - call.at < this.ttlMs ? call : undefined;
  }

  /** The oldest call of the tool in the session that still waits for its result and is `wanted`. */
  private oldest(sessionId: string, toolName: string, wanted: (call: Call) => boolean): Call | undefined {
    const key = toolKey(sessionId, toolName);
    const calls = this.waiting.get(key)?.filter((c) => !c.done && this.live(c));
    if (!calls || calls.length === 0) {
      this.waiting.delete(key);
      return undefined;
    }
    this.waiting.set(key, calls);
    return calls.find(wanted);
  }

  /** Sets `key` as the newest entry of `map`, dropping the oldest beyond `max`. */
  private bounded<V>(map: Map<string, V>, key: string, value: V): void {
    map.delete(key);
    if (map.size >= this.max) {
      const oldest = map.keys().next().value;
      if (oldest !== undefined) map.delete(oldest);
    }
    map.set(key, value);
  }
}

const idKey = (sessionId: string, toolCallId: string) => `${sessionId}\u0000${toolCallId}`;

const toolKey = (sessionId: string, toolName: string) => `${sessionId}\u0000${toolName}`;

function fieldDigests(args: Record<string, unknown>): Map<string, string> {
  return new Map(Object.entries(args).map(([k, v]) => [k, sha256(v ?? null)]));
}
