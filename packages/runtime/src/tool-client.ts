import { DEFAULT_INVOKE_TIMEOUT_MS, type GeodeConnection, RequestFailedError, requestJson } from "@geode/bus";
import {
  type CorrelationInput,
  isResultRef,
  operationKeyOf,
  receiptReply,
  type ToolDefinition,
  ToolExecuteLeg,
  type ToolExecuteReply,
  unresolvedResultReply,
} from "@geode/contracts";
import { envSpec, envVar, read } from "@geode/env";
import { ReceiptStore, ResultRefError, ResultStore, type StoredReceipt, ToolStore } from "@geode/state";

export interface ToolCall {
  tool_name: string;
  arguments: Record<string, unknown>;
  correlation?: CorrelationInput;
  /** The logical operation of an effectful call; default `{session_id}.{tool_call_id}`. */
  operation_key?: string;
  /** The caller's budget for hooks, in ms. */
  timeout_ms?: number;
}

export interface ToolClient {
  /**
   * Runs one call through the tool-executor's full boundary and returns its reply
   * (`completed|blocked|denied|replayed|in_progress|indeterminate|failed`). Error replies
   * (`unknown_tool`, `schema_invalid`, `invalid_request`, `unavailable`, …) reject as GeodeError.
   *
   * When no reply comes within the wait (`timeoutMs`, default: see `defaultWaitMs`), the client
   * reads the operation's receipt and answers from it: `in_progress` while the executor running
   * it holds its lease, `indeterminate` once that lapsed, `replayed` with the stored result if it
   * completed meanwhile. Without a receipt (a read tool, or a call not admitted yet) the timeout
   * rejects as GeodeError `timeout`.
   *
   * A large result comes by reference (`{"$ref", "bytes", "sha256"}`, docs/protocol.md#large-results):
   * the client reads it from `{ns}_results` and checks its size and sha256, so the reply holds the
   * whole result. One that cannot be read (expired, or not what its reference says) is an error
   * result that names it, with the reply's status kept: the operation is never run again.
   */
  execute(call: ToolCall, options?: { timeoutMs?: number; signal?: AbortSignal }): Promise<ToolExecuteReply>;
  /**
   * The default wait for a call: the tool's time limit (its definition's `timeout_ms`, else
   * `toolTimeoutMs`; 0 = none), plus `approvalTimeoutMs` when the tool requires approval or its
   * definition is not in `{ns}_tools` (a built-in), plus one hook budget for the hooks around it.
   */
  defaultWaitMs(call: Pick<ToolCall, "tool_name" | "timeout_ms">): Promise<number>;
}

export interface ToolClientOptions {
  /** Terminal limit of a tool whose definition sets none; default `GEODE_TOOL_TIMEOUT_MS` (300 s). */
  toolTimeoutMs?: number;
  /** How long the executor waits for a human approval; default `GEODE_APPROVAL_TIMEOUT_MS` (60 s). */
  approvalTimeoutMs?: number;
}

/** Stands for "no limit" (a tool with `timeout_ms: 0`): nats.js needs a finite timer. */
const NO_LIMIT_MS = 86_400_000;
/** How long a tool definition read from `{ns}_tools` is trusted before it is read again. */
const DEFINITION_TTL_MS = 30_000;

export function createToolClient(conn: GeodeConnection, options: ToolClientOptions = {}): ToolClient {
  const limits = clientLimits(options);
  const buckets = new ToolBuckets(conn);
  const results = new ResultStore(conn);

  /** The reply with its result read back when it came by reference. */
  async function resolved(reply: ToolExecuteReply): Promise<ToolExecuteReply> {
    if (!isResultRef(reply.result)) return reply;
    const ref = reply.result;
    try {
      return { ...reply, result: await results.get(ref) };
    } catch (err) {
      if (err instanceof ResultRefError) return unresolvedResultReply(reply, ref, err.message);
      throw err;
    }
  }

  async function defaultWaitMs(call: Pick<ToolCall, "tool_name" | "timeout_ms">): Promise<number> {
    const def = await buckets.definition(call.tool_name);
    const limit = def?.timeout_ms ?? limits.toolTimeoutMs;
    if (limit === 0) return NO_LIMIT_MS;
    const approval = def === null || def.requires_approval ? limits.approvalTimeoutMs : 0;
    return limit + approval + (call.timeout_ms ?? DEFAULT_INVOKE_TIMEOUT_MS);
  }

  return {
    defaultWaitMs,
    async execute(call, opts = {}) {
      const waitMs = opts.timeoutMs ?? (await defaultWaitMs(call));
      let reply: ToolExecuteReply;
      try {
        reply = await requestJson(conn, conn.names.toolExecute, ToolExecuteLeg.request.encode(call), {
          timeoutMs: waitMs,
          signal: opts.signal,
          reply: ToolExecuteLeg.reply,
        });
      } catch (err) {
        if (!(err instanceof RequestFailedError && err.failure === "timeout")) throw err;
        const known = await buckets.receiptOf(call).catch(() => null);
        if (!known) throw err;
        // What a retry would get, from the receipt the executor keeps.
        reply = receiptReply(known.receipt, known.revision, { note: `no reply within ${waitMs} ms` });
      }
      return resolved(reply);
    },
  };
}

/** The client's own defaults: the executor's and the approvers' limits, from the same variables. */
const CLIENT_ENV = envSpec({
  toolTimeoutMs: envVar("GEODE_TOOL_TIMEOUT_MS", read.int(300_000), {
    default: "`300000`",
    meaning: "the terminal limit of a tool without its own `timeout_ms`",
  }),
  approvalTimeoutMs: envVar("GEODE_APPROVAL_TIMEOUT_MS", read.int(60_000), {
    default: "`60000`",
    meaning: "the wait for a human approval",
  }),
});

function clientLimits(options: ToolClientOptions): Required<ToolClientOptions> {
  if (options.toolTimeoutMs !== undefined && options.approvalTimeoutMs !== undefined)
    return { toolTimeoutMs: options.toolTimeoutMs, approvalTimeoutMs: options.approvalTimeoutMs };
  let env = { toolTimeoutMs: 300_000, approvalTimeoutMs: 60_000 };
  try {
    env = CLIENT_ENV.parse(process.env);
  } catch {
    // A bad variable is the services' to report; the client keeps the documented defaults.
  }
  return {
    toolTimeoutMs: options.toolTimeoutMs ?? env.toolTimeoutMs,
    approvalTimeoutMs: options.approvalTimeoutMs ?? env.approvalTimeoutMs,
  };
}

/** What the client reads (never writes, never creates): tool definitions and receipts. */
class ToolBuckets {
  private tools: Promise<ToolStore> | undefined;
  private receipts: Promise<ReceiptStore> | undefined;
  private readonly definitions = new Map<string, { def: ToolDefinition | null; at: number }>();

  constructor(private readonly conn: GeodeConnection) {}

  /** A remote tool's definition from `{ns}_tools`; null for a built-in, an unknown or an unreadable one. */
  async definition(name: string): Promise<ToolDefinition | null> {
    const cached = this.definitions.get(name);
    if (cached && Date.now() - cached.at < DEFINITION_TTL_MS) return cached.def;
    let def: ToolDefinition | null = null;
    try {
      this.tools ??= ToolStore.open(this.conn, { create: false });
      def = await (await this.tools).get(name);
    } catch {
      // Not readable (no bucket, no permission): fall back to the defaults.
    }
    this.definitions.set(name, { def, at: Date.now() });
    return def;
  }

  /** The receipt of a call's operation key, or null when it has none (yet). */
  async receiptOf(call: ToolCall): Promise<StoredReceipt | null> {
    const key = operationKeyOf(call);
    if (key === null) return null;
    this.receipts ??= ReceiptStore.open(this.conn, { create: false });
    return (await this.receipts).get(key).catch(() => null);
  }
}
