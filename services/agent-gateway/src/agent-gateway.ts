import { type BusConnection, type Logger, RuntimeEventBus, silentLogger } from "@geode/bus";
import { agentCheckPath, type Names } from "@geode/contracts";
import { NO_OBSERVER, type ServiceObserver } from "@geode/service";
import type { AnyAdapter } from "./agent-adapter.js";
import { handleAgentCheck } from "./agent-check.js";
import { AgentDirectory } from "./agent-directory.js";
import { handleAgentHook } from "./agent-hook.js";
import { GuardedHooks } from "./agent-plane/guarded-hooks.js";
import { SessionTracker } from "./agent-plane/session-tracker.js";
import { ToolCalls } from "./agent-plane/tool-calls.js";
import { claudeCodeAdapter } from "./claude-code/claude-code-adapter.js";
import { codexAdapter } from "./codex/codex-adapter.js";
import { copilotAdapter } from "./copilot/copilot-adapter.js";
import { type GatewayConfig, gatewayConfig } from "./gateway-config.js";
import { geminiCliAdapter } from "./gemini-cli/gemini-cli-adapter.js";
import { type HookRoute, startHttpServer } from "./http-server.js";
import { LLM_PATH_PREFIX, LlmEndpoint } from "./llm/llm-endpoint.js";
import { McpEndpoint } from "./mcp/mcp-endpoint.js";
import { opencodeAdapter } from "./opencode/opencode-adapter.js";
import { createPlane } from "./plane.js";
import { qwenCodeAdapter } from "./qwen-code/qwen-code-adapter.js";
import { RefusedTokenLog } from "./refused-token-log.js";

/** The agent kinds the gateway speaks for, one adapter each. */
const ADAPTERS: readonly AnyAdapter[] = [
  claudeCodeAdapter,
  codexAdapter,
  geminiCliAdapter,
  copilotAdapter,
  qwenCodeAdapter,
  opencodeAdapter,
];

export interface AgentGatewayOptions {
  /** The connection, with the interceptors its doors run (a service's `ServiceContext.bus`). */
  nc: BusConnection;
  names: Names;
  log?: Logger;
  /** Listen address and limits; fields given here override the environment's. */
  config?: Partial<GatewayConfig>;
  /**
   * Publisher of events and timeline records (default: a bus with source `agent-gateway` that
   * publishes each call's records after its answer).
   */
  events?: RuntimeEventBus;
  /** Where the LLM providers' keys are looked up by `key_env` (default: the process environment). */
  providerKeys?: Readonly<Record<string, string | undefined>>;
  /** Where hook spans, governance gaps and pending approvals are reported (default: nowhere). */
  observer?: ServiceObserver;
}

export interface AgentGateway {
  /** `http://host:port` as bound. */
  readonly url: string;
  /** Agents currently known (tests and health). */
  agents(): number;
  /** Stops taking requests, answers the ones in flight, flushes its events. */
  stop(): Promise<void>;
}

/**
 * Starts the agent gateway (docs/protocol.md#agent-gateway): HTTP for agents with hook systems of their own, each call
 * mapped to the plane's hooks, verifier and approvers. Stateless apart from NATS: replicas behind
 * any HTTP balancer share nothing but the plane.
 */
export async function startAgentGateway(options: AgentGatewayOptions): Promise<AgentGateway> {
  const { nc, names } = options;
  const log = options.log ?? silentLogger();
  const observer = options.observer ?? NO_OBSERVER;
  const config: GatewayConfig = gatewayConfig(options.config);
  // A call's records are published after its answer, in order, and before the gateway's next
  // request to the plane (the plane sends the outbox first): off the answer's path, never after a
  // step they precede.
  const events =
    options.events ??
    (await RuntimeEventBus.create({
      nc,
      names,
      source: "agent-gateway",
      log,
      batchPublishes: true,
      batchDelayMs: config.eventDelayMs,
    }));
  const plane = await createPlane({
    nc,
    names,
    events,
    log,
    hookTimeoutMs: config.hookTimeoutMs,
    verifyTimeoutMs: config.verifyTimeoutMs,
    approvalTimeoutMs: config.approvalTimeoutMs,
    observer,
  });
  const directory = await AgentDirectory.start(plane);
  const sessions = new SessionTracker(plane, log);
  const toolCalls = new ToolCalls();
  const guarded = new GuardedHooks();
  const mcp = await McpEndpoint.start({
    plane,
    sessions,
    log,
    groupsOf: (agent) => directory.groupsOf(agent),
    sessionIdleMs: config.mcpSessionIdleMs,
    toolTimeoutMs: config.toolTimeoutMs,
    hookTimeoutMs: config.hookTimeoutMs,
  });
  const llmRefused = new RefusedTokenLog(log);
  const llm = await LlmEndpoint.start({
    plane,
    log,
    identify: (authorization) => directory.identify(authorization),
    groupsOf: (agent) => directory.groupsOf(agent),
    refused: (remote, path, authorization) => llmRefused.note(remote, path, authorization),
    keys: options.providerKeys ?? process.env,
    maxBodyBytes: config.llmMaxBodyBytes,
    timeoutMs: config.llmTimeoutMs,
    sessionIdleMs: config.mcpSessionIdleMs,
  });
  observer.governanceGapKinds(ADAPTERS.map((a) => a.kind));
  const http = await startHttpServer({
    host: config.host,
    port: config.port,
    maxBodyBytes: config.maxBodyBytes,
    timeouts: config.timeouts,
    log,
    observer,
    routes: {
      identify: (authorization) => directory.identify(authorization),
      hooks: new Map<string, HookRoute>([
        ...ADAPTERS.map((adapter): [string, HookRoute] => [
          adapter.path,
          (request) => handleAgentHook(adapter, { plane, sessions, toolCalls, guarded, log }, request),
        ]),
        // `geode connect <kind> --check` reports its result beside the kind's hook endpoint.
        ...ADAPTERS.map((adapter): [string, HookRoute] => [
          agentCheckPath(adapter.path),
          async (request) => handleAgentCheck(adapter, plane, request),
        ]),
      ]),
      healthy: () => plane.connected(),
      mcp: {
        serve: (request, agent, body) => mcp.fetch(request, agent, body),
        allowedHosts: [
          "localhost",
          "127.0.0.1",
          "[::1]",
          ...(config.host === "0.0.0.0" || config.host === "::" ? [] : [config.host]),
          ...config.mcpAllowedHosts,
        ],
        maxBodyBytes: config.mcpMaxBodyBytes,
      },
      llm: { prefix: LLM_PATH_PREFIX, serve: (req, res) => llm.serve(req, res) },
    },
  });
  log.info({ url: http.url }, `agent-gateway listening on ${http.url}`);
  return {
    url: http.url,
    agents: () => directory.size(),
    async stop() {
      await http.close();
      directory.stop();
      mcp.stop();
      llm.stop();
      if (!options.events) await events.close();
    },
  };
}
