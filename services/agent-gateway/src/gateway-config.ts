import { envSpec, envVar, read } from "@geode/env";
import { checkHttpTimeouts, type HttpTimeouts, httpTimeoutVars } from "@geode/service";

/** The agent gateway's settings. */
export interface GatewayConfig {
  /** Listen address (port 0 picks a free one). */
  host: string;
  port: number;
  /** Largest request body accepted; larger is 413. */
  maxBodyBytes: number;
  /** How long a client may take to send a request, and stay idle between requests. */
  timeouts: HttpTimeouts;
  /** Budget of one hook invocation through the hook-dispatcher. */
  hookTimeoutMs: number;
  /** Budget of one verification (three hook chains run inside it). */
  verifyTimeoutMs: number;
  /** Wait for a human approver. */
  approvalTimeoutMs: number;
  /**
   * How long a call's events and timeline records may wait after its answer before they are
   * published, ms; 0 (the default) sends them right after it. They go out sooner when the gateway
   * sends its next request to the plane, ahead of it.
   */
  eventDelayMs: number;
  /** An agent's MCP session ends after this long without a call (`GEODE_MCP_SESSION_IDLE_MS`). */
  mcpSessionIdleMs: number;
  /** Largest `POST /v1/mcp` body; larger is 413 with a JSON-RPC error. */
  mcpMaxBodyBytes: number;
  /** Hostnames `/v1/mcp` accepts in Host and Origin, beside localhost and the listen host. */
  mcpAllowedHosts: readonly string[];
  /** Terminal limit of a tool without its own `timeout_ms` (the wait of an MCP call). */
  toolTimeoutMs: number;
  /** Largest model request body (`GEODE_LLM_MAX_BODY_BYTES`); larger is 413 in the provider's shape. */
  llmMaxBodyBytes: number;
  /** Longest wait for a provider's answer to begin, and between its chunks (`GEODE_LLM_TIMEOUT_MS`). */
  llmTimeoutMs: number;
}

const DEFAULT_MCP_SESSION_IDLE_MS = 1_800_000;
const DEFAULT_MCP_MAX_BODY_BYTES = 4 * 1024 * 1024;
/** Model requests carry the whole conversation, images included. */
const DEFAULT_LLM_MAX_BODY_BYTES = 32 * 1024 * 1024;
/** Reasoning models may think for minutes before their first byte. */
const DEFAULT_LLM_TIMEOUT_MS = 600_000;

export const DEFAULT_GATEWAY_ADDR = "127.0.0.1:4280";
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;
/**
 * 0: a call's records go out right after its answer (at the end of that event-loop turn). Holding
 * them longer, to send them with the gateway's next request, measured slower (bench/gateway): the
 * plane then stores them before it routes that request.
 */
const DEFAULT_EVENT_DELAY_MS = 0;
/**
 * An agent sends its hook call at once (bodies are small): 10 s for the headers and 30 s for the
 * whole request are plenty on a slow link, and a client trickling bytes is gone by then. Idle
 * keep-alive connections stay 65 s, longer than the 60 s idle timeout of common balancers, so the
 * gateway never closes a connection that a balancer in front of it is about to reuse.
 */
const DEFAULT_GATEWAY_TIMEOUTS: HttpTimeouts = {
  headersMs: 10_000,
  requestMs: 30_000,
  idleMs: 65_000,
};
const TIMEOUT_VARS = httpTimeoutVars("GEODE_GATEWAY", "agent-gateway", DEFAULT_GATEWAY_TIMEOUTS);

const ADDR = /^(?<host>\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):(?<port>\d{1,5})$/;

/** `host:port` (an IPv6 host in brackets), or why not. */
function parseAddr(raw: string, name: string): { value: { host: string; port: number } } | { error: string } {
  const m = ADDR.exec(raw);
  const port = Number(m?.groups?.["port"]);
  if (!m || port > 65_535) return { error: `${name} must be host:port, got ${JSON.stringify(raw)}` };
  return { value: { host: (m.groups?.["host"] ?? "").replace(/^\[|\]$/g, ""), port } };
}

const DEFAULT_ADDR = parseAddr(DEFAULT_GATEWAY_ADDR, "") as { value: { host: string; port: number } };

/** The agent gateway's own environment (docs/operations.md, "Configuration"), beside the common one. */
export const GATEWAY_ENV = envSpec(
  {
    addr: envVar("GEODE_GATEWAY_ADDR", read.custom(DEFAULT_ADDR.value, parseAddr), {
      default: `\`${DEFAULT_GATEWAY_ADDR}\` (\`0.0.0.0:4280\` in compose)`,
      meaning: "the agent gateway's HTTP `host:port`; port 0 picks a free one (agent-gateway)",
    }),
    maxBodyBytes: envVar("GEODE_GATEWAY_MAX_BODY_BYTES", read.int(DEFAULT_MAX_BODY_BYTES, 1024), {
      default: "1 MiB",
      meaning: "largest hook request body; a larger one is 413 (agent-gateway)",
    }),
    mcpSessionIdleMs: envVar("GEODE_MCP_SESSION_IDLE_MS", read.int(DEFAULT_MCP_SESSION_IDLE_MS, 1000), {
      default: "`1800000`",
      meaning:
        "an agent's MCP calls (per agent and client name) form one session until this long passes without a call (agent-gateway)",
    }),
    llmMaxBodyBytes: envVar("GEODE_LLM_MAX_BODY_BYTES", read.int(DEFAULT_LLM_MAX_BODY_BYTES, 1024), {
      default: "32 MiB",
      meaning:
        "largest model request body on `/v1/llm/…`; a larger one is 413 in the provider's error shape (agent-gateway)",
    }),
    llmTimeoutMs: envVar("GEODE_LLM_TIMEOUT_MS", read.int(DEFAULT_LLM_TIMEOUT_MS, 100), {
      default: "`600000`",
      meaning:
        "longest wait for a model provider's answer to begin, and between two of its chunks; then 504 or a cut stream (agent-gateway)",
    }),
    headersTimeoutMs: TIMEOUT_VARS.headersMs,
    requestTimeoutMs: TIMEOUT_VARS.requestMs,
    idleTimeoutMs: TIMEOUT_VARS.idleMs,
  },
  (v) => checkHttpTimeouts("GEODE_GATEWAY", gatewayTimeouts(v)),
);

/** The HTTP timeouts of what `GATEWAY_ENV` read. */
export function gatewayTimeouts(v: {
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  idleTimeoutMs: number;
}): HttpTimeouts {
  return { headersMs: v.headersTimeoutMs, requestMs: v.requestTimeoutMs, idleMs: v.idleTimeoutMs };
}

/** Fills the defaults of what is not given (the service passes what it read from its environment). */
export function gatewayConfig(partial: Partial<GatewayConfig> = {}): GatewayConfig {
  return {
    host: partial.host ?? DEFAULT_ADDR.value.host,
    port: partial.port ?? DEFAULT_ADDR.value.port,
    maxBodyBytes: partial.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES,
    timeouts: partial.timeouts ?? DEFAULT_GATEWAY_TIMEOUTS,
    hookTimeoutMs: partial.hookTimeoutMs ?? 30_000,
    verifyTimeoutMs: partial.verifyTimeoutMs ?? 90_000,
    approvalTimeoutMs: partial.approvalTimeoutMs ?? 60_000,
    eventDelayMs: partial.eventDelayMs ?? DEFAULT_EVENT_DELAY_MS,
    mcpSessionIdleMs: partial.mcpSessionIdleMs ?? DEFAULT_MCP_SESSION_IDLE_MS,
    mcpMaxBodyBytes: partial.mcpMaxBodyBytes ?? DEFAULT_MCP_MAX_BODY_BYTES,
    mcpAllowedHosts: partial.mcpAllowedHosts ?? [],
    toolTimeoutMs: partial.toolTimeoutMs ?? 300_000,
    llmMaxBodyBytes: partial.llmMaxBodyBytes ?? DEFAULT_LLM_MAX_BODY_BYTES,
    llmTimeoutMs: partial.llmTimeoutMs ?? DEFAULT_LLM_TIMEOUT_MS,
  };
}
