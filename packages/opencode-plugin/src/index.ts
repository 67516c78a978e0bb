/**
 * The opencode plugin of the GEODE agent gateway (docs/opencode.md). opencode has no command or
 * HTTP hooks, only plugins: this one posts each tool call, its result, each permission prompt,
 * each prompt and the session events to `POST /v1/opencode/hook` with the agent's token, and
 * throws the gateway's refusal, which is what the model (or the user) reads. When the gateway
 * cannot answer, a guarded call is refused unless the plugin was written fail-open.
 *
 * One file with no imports (Node's or Bun's `fetch` only), so `geode connect opencode` can copy it
 * beside opencode's config and opencode loads it with no network.
 */

/** The plugin's options, as `geode connect opencode` writes them into the opencode config. */
export interface GeodePluginOptions {
  /** The gateway's opencode endpoint (`http://127.0.0.1:4280/v1/opencode/hook`). */
  url?: string;
  /** The variable holding the agent token (default `GEODE_AGENT_TOKEN`). */
  token_env?: string;
  /** Let guarded calls go on, ungoverned, when the gateway cannot answer (default: refuse them). */
  fail_open?: boolean;
  /** How long one call waits for the gateway (default 120 000 ms, the approvers' time included). */
  timeout_ms?: number;
}

/** The gateway's answer (`OpencodeHookOutput` of the contract); `{}` means "go on". */
interface GatewayAnswer {
  decision?: "allow" | "deny";
  reason?: string;
  args?: Record<string, unknown>;
  output?: string;
  context?: string;
}

interface ToolInput {
  tool: string;
  sessionID: string;
  callID?: string;
  args?: unknown;
}

interface PermissionInput {
  type?: string;
  permission?: string;
  pattern?: string | string[];
  patterns?: string[];
  sessionID: string;
  callID?: string;
  tool?: { callID?: string };
  title?: string;
  metadata?: Record<string, unknown>;
}

interface BusEvent {
  type: string;
  properties?: Record<string, unknown>;
}

const DEFAULT_URL = "http://127.0.0.1:4280/v1/opencode/hook";
const DEFAULT_TIMEOUT_MS = 120_000;
/** A tool's output is sent up to this many characters (the rest never reaches a handler). */
const MAX_OUTPUT_CHARS = 65_536;
/** The events that decide before something happens: refused when the gateway cannot answer. */
const GUARDED = new Set(["tool.execute.before", "permission.ask", "chat.message"]);

/** An Error whose message is what opencode shows the model (a refused tool call) or the user. */
class GeodeRefusal extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = "GeodeRefusal";
  }
}

function str(v: unknown): string | undefined {
  return typeof v === "string" ? v : undefined;
}

/**
 * Posts one body; the gateway's answer, or `{decision: "deny"}` with the reason for a guarded
 * event that cannot be answered (fail-closed), else `{}`.
 */
async function send(
  options: Required<GeodePluginOptions>,
  body: Record<string, unknown>,
): Promise<GatewayAnswer> {
  const event = String(body["event"]);
  const then = options.fail_open ? "going on ungoverned" : "a guarded call is refused";
  let why: string;
  try {
    const token = process.env[options.token_env];
    const res = await fetch(options.url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        ...(token ? { authorization: `Bearer ${token}` } : {}),
      },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(options.timeout_ms),
    });
    if (res.status === 200) return (await res.json()) as GatewayAnswer;
    await res.body?.cancel();
    why =
      res.status === 401
        ? `geode: the gateway refused the agent token (401): check ${options.token_env} (geode agents ls)`
        : `geode: the agent gateway answered HTTP ${res.status}`;
  } catch (err) {
    const cause = (err as { cause?: { code?: string } }).cause?.code;
    why = `geode: the agent gateway could not answer (${cause ?? (err instanceof Error ? err.message : String(err))})`;
  }
  if (!GUARDED.has(event) || options.fail_open) {
    if (GUARDED.has(event)) console.error(`${why}; ${then}`);
    return {};
  }
  return { decision: "deny", reason: `${why}; ${then}` };
}

/**
 * The rewritten arguments, written into the object opencode passed (it runs the tool with the
 * object it holds, not with a new one put in `output.args`).
 */
function rewriteInPlace(output: { args: unknown }, args: Record<string, unknown>): void {
  const current = output.args;
  if (current === null || typeof current !== "object" || Array.isArray(current)) {
    output.args = args;
    return;
  }
  const target = current as Record<string, unknown>;
  for (const key of Object.keys(target)) if (!Object.hasOwn(args, key)) delete target[key];
  Object.assign(target, args);
}

/** The text of a user message's parts (what the user typed). */
function promptText(parts: unknown): string {
  if (!Array.isArray(parts)) return "";
  return parts
    .filter((p): p is { type: string; text: string } => p?.type === "text" && typeof p.text === "string")
    .map((p) => p.text)
    .join("\n");
}

/** A sub-agent session this instance saw start (opencode's `task` tool): its parent and its agent. */
interface Child {
  parent: string;
  agent?: string;
}

/**
 * The body for the gateway of a bus event (null: an event not sent). A sub-agent's session
 * (`info.parentID`) is noted in `children` when it is created, and its idle and error name the
 * parent and the agent again, so the gateway can stop the sub-agent it started.
 */
function sessionEvent(event: BusEvent, children: Map<string, Child>): Record<string, unknown> | null {
  const p = event.properties ?? {};
  const info = (p["info"] ?? {}) as Record<string, unknown>;
  switch (event.type) {
    case "session.created":
    case "session.deleted": {
      const id = str(info["id"]) ?? str(p["sessionID"]);
      if (!id) return null;
      const parent = str(info["parentID"]);
      const agent = str(info["agent"])?.slice(0, 128);
      const title = str(info["title"]);
      if (parent && event.type === "session.created")
        children.set(id, { parent, ...(agent ? { agent } : {}) });
      return {
        event: event.type,
        session_id: id,
        ...(parent ? { parent_session_id: parent } : {}),
        ...(parent && event.type === "session.created"
          ? { ...(agent ? { agent } : {}), ...(title ? { title: title.slice(0, 512) } : {}) }
          : {}),
        ...(event.type === "session.deleted" ? { reason: "deleted" } : {}),
      };
    }
    case "session.idle":
    case "session.compacted":
    case "session.error": {
      const id = str(p["sessionID"]);
      if (!id) return null;
      const child = event.type === "session.compacted" ? undefined : children.get(id);
      return {
        event: event.type,
        session_id: id,
        ...(child ? { parent_session_id: child.parent, ...(child.agent ? { agent: child.agent } : {}) } : {}),
      };
    }
    default:
      return null;
  }
}

/** The config entry's options, with the environment and defaults filled in. */
function resolveOptions(given: GeodePluginOptions | undefined): Required<GeodePluginOptions> {
  return {
    url: given?.url ?? process.env["GEODE_OPENCODE_HOOK_URL"] ?? DEFAULT_URL,
    token_env: given?.token_env ?? "GEODE_AGENT_TOKEN",
    fail_open: given?.fail_open === true,
    timeout_ms: given?.timeout_ms ?? DEFAULT_TIMEOUT_MS,
  };
}

/**
 * The hooks around one tool call: before it (refuse, or rewrite its arguments), after it
 * (replace or extend its output) and opencode's permission prompt (answer it).
 */
function toolHooks(
  post: (body: Record<string, unknown>) => Promise<GatewayAnswer>,
  refuseOn: (answer: GatewayAnswer) => void,
) {
  return {
    "tool.execute.before": async (input: ToolInput, output: { args: unknown }) => {
      const answer = await post({
        event: "tool.execute.before",
        session_id: input.sessionID,
        tool: input.tool,
        ...(input.callID ? { call_id: input.callID } : {}),
        args: output.args ?? {},
      });
      refuseOn(answer);
      if (answer.args) rewriteInPlace(output, answer.args);
    },
    "tool.execute.after": async (input: ToolInput, output: { title?: string; output?: string }) => {
      const answer = await post({
        event: "tool.execute.after",
        session_id: input.sessionID,
        tool: input.tool,
        ...(input.callID ? { call_id: input.callID } : {}),
        args: input.args ?? {},
        output: (output.output ?? "").slice(0, MAX_OUTPUT_CHARS),
        title: output.title ?? "",
      });
      if (answer.output !== undefined) output.output = answer.output;
      if (answer.context) output.output = `${output.output ?? ""}\n\n${answer.context}`;
    },
    "permission.ask": async (input: PermissionInput, output: { status: "ask" | "deny" | "allow" }) => {
      const patterns = input.patterns ?? (input.pattern === undefined ? [] : [input.pattern].flat());
      const callId = input.callID ?? input.tool?.callID;
      const answer = await post({
        event: "permission.ask",
        session_id: input.sessionID,
        tool: input.type ?? input.permission ?? "unknown",
        ...(callId ? { call_id: callId } : {}),
        args: { ...(input.metadata ?? {}), patterns },
        ...(input.title ? { title: input.title } : {}),
      });
      if (answer.decision) output.status = answer.decision;
    },
  };
}

/**
 * The plugin: opencode calls it once per instance with its context and the options of its
 * config entry (`"plugin": [["file:///…/geode-opencode-plugin.js", {url, fail_open}]]`).
 */
export async function GeodeOpencodePlugin(_context: unknown, given?: GeodePluginOptions) {
  const options = resolveOptions(given);
  // The sessions this instance saw: each ends when opencode disposes of the instance (a
  // sub-agent's ends with its task instead).
  const sessions = new Set<string>();
  const children = new Map<string, Child>();
  const post = (body: Record<string, unknown>) => {
    sessions.add(String(body["session_id"]));
    return send(options, body);
  };
  const refuseOn = (answer: GatewayAnswer) => {
    if (answer.decision === "deny") throw new GeodeRefusal(answer.reason ?? "geode: refused");
  };
  return {
    dispose: async () => {
      const ended = [...sessions].filter((id) => !children.has(id));
      sessions.clear();
      await Promise.all(
        ended.map((id) => send(options, { event: "instance.disposed", session_id: id, reason: "exit" })),
      );
    },
    ...toolHooks(post, refuseOn),
    "chat.message": async (
      input: { sessionID: string; messageID?: string; model?: { providerID: string; modelID: string } },
      output: { parts: unknown },
    ) => {
      const answer = await post({
        event: "chat.message",
        session_id: input.sessionID,
        ...(input.messageID ? { message_id: input.messageID } : {}),
        ...(input.model ? { model: `${input.model.providerID}/${input.model.modelID}` } : {}),
        prompt: promptText(output.parts),
      });
      // opencode shows a plugin's error in a prompt as "Unexpected server error": say why on stderr too.
      if (answer.decision === "deny") console.error(answer.reason);
      refuseOn(answer);
    },
    "experimental.session.compacting": async (input: { sessionID: string }) => {
      await post({ event: "session.compacting", session_id: input.sessionID });
    },
    event: async ({ event }: { event: BusEvent }) => {
      const body = sessionEvent(event, children);
      if (body) await post(body);
    },
  };
}
