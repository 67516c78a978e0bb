import type { CommandModule, CommandSpec } from "../command.js";
import type { LlmAgent } from "../connect/llm-config.js";
import type { McpAgent } from "./hook-shim.js";

/** `geode connect <agent> --mcp …` writes the agent's MCP configuration instead of its hooks. */
function withMcp(agent: McpAgent, hooks: CommandModule): CommandModule {
  return withLlm(agent, {
    run: async (args, io) =>
      args.includes("--mcp")
        ? (await import("../connect/mcp-config.js")).connectMcp(agent, args, io)
        : hooks.run(args, io),
  });
}

/** `geode connect <agent> --llm PROVIDER …` points the agent's model calls at the gateway instead. */
function withLlm(agent: LlmAgent, hooks: CommandModule): CommandModule {
  return {
    run: async (args, io) =>
      args.some((a) => a === "--llm" || a.startsWith("--llm="))
        ? (await import("../connect/llm-config.js")).connectLlm(agent, args, io)
        : hooks.run(args, io),
  };
}

/**
 * Every `geode` sub-command: what help shows, and the module that runs it, imported only when the
 * command is chosen (so `geode --help` or `geode health` never load Postgres, the demo or the console).
 */
export const COMMANDS: CommandSpec[] = [
  {
    path: ["demo"],
    summary: "run a scripted agent session through every hook and join point, then show the audit",
    usage: "geode demo [--namespace NS] [--keep] [--quiet]",
    load: async () => (await import("./demo.js")).demoCommand,
  },
  {
    path: ["schema"],
    summary: "print a public hook's Draft 2020-12 JSON Schema (the runtime canon)",
    usage: "geode schema <HookName> [--version v1|v2] | geode schema --all [--version v1|v2]",
    load: async () => (await import("./schema.js")).schemaCommand,
  },
  {
    path: ["docs", "hooks"],
    summary: "generate docs/hooks.md from the runtime hook schemas (--write, --check)",
    usage: "geode docs hooks [--write | --check] [--out <file>]",
    load: async () => (await import("./docs.js")).docsCommand,
  },
  {
    path: ["hook", "invoke"],
    summary: "invoke a public hook as a runtime would and print the outcome (exit 3 when blocked)",
    usage: "geode hook invoke <HookName> --payload <JSON|@file|@-> [--session ID] [--timeout ms] [--json]",
    load: async () => (await import("./hook.js")).hookInvokeCommand,
  },
  {
    path: ["tool", "call"],
    summary: "call a tool through the tool-executor's boundary and print the reply (exit 3 unless completed)",
    usage:
      "geode tool call <tool> [--args <JSON|@file|@->] [--key <operation key>] [--session ID] [--timeout ms] [--json]",
    load: async () => (await import("./tool.js")).toolCallCommand,
  },
  {
    path: ["audit"],
    summary: "print the latest extension_invocations rows (every handler and join point call) as a table",
    usage: "geode audit [--session ID] [--limit N] [--json]",
    load: async () => (await import("./audit.js")).auditCommand,
  },
  {
    path: ["audit", "keygen"],
    summary: "write a new Ed25519 key for the notary's checkpoints (mode 0600) and print its verifier key",
    usage: "geode audit keygen [--out FILE] [--name NAME]",
    load: async () => (await import("./audit-keys.js")).auditKeygenCommand,
  },
  {
    path: ["audit", "key"],
    summary: "print the verifier key of GEODE_AUDIT_KEY_FILE (what checks the notary's checkpoints)",
    usage: "geode audit key",
    load: async () => (await import("./audit-keys.js")).auditKeyCommand,
  },
  {
    path: ["audit", "checkpoint"],
    summary: "print a log's latest signed checkpoint, the note exactly as the notary signed it",
    usage: "geode audit checkpoint [--log events|timeline]",
    load: async () => (await import("./audit-proof.js")).auditCheckpointCommand,
  },
  {
    path: ["audit", "verify"],
    summary:
      "re-read the streams, recompute the audit trees and check every checkpoint; names the first divergence (exit 1)",
    usage:
      "geode audit verify [--log events|timeline] [--key VKEY] [--checkpoint FILE]… [--projection] [--json]",
    load: async () => (await import("./audit-verify.js")).auditVerifyCommand,
  },
  {
    path: ["audit", "prove"],
    summary: "print the inclusion proof of one stream sequence against the latest checkpoint, as JSON",
    usage: "geode audit prove SEQ [--log events|timeline]",
    load: async () => (await import("./audit-proof.js")).auditProveCommand,
  },
  {
    path: ["audit", "check-proof"],
    summary: "check an inclusion proof offline (no plane, NATS or Postgres): signature, path, message",
    usage: "geode audit check-proof FILE --key VKEY [--message FILE]",
    load: async () => (await import("./audit-check-proof.js")).auditCheckProofCommand,
  },
  {
    path: ["audit", "export"],
    summary: "write a period's messages, their proofs and the covering checkpoint, for check-proof alone",
    usage: "geode audit export --since T [--until T] [--log events|timeline] --out DIR",
    load: async () => (await import("./audit-proof.js")).auditExportCommand,
  },
  {
    path: ["handlers", "add"],
    summary: "register an HTTP endpoint as a hook handler (a webhook the agent gateway calls, signed)",
    usage:
      "geode handlers add --hook <HookName> --name <handler> --url <http(s)://…> [--priority P] [--timeout-ms N] [--failure-mode open|closed] [--match glob,glob] [--lease-ms N] [--schema-version v1|v2]",
    load: async () => (await import("./handlers.js")).handlersAddCommand,
  },
  {
    path: ["handlers", "ls"],
    summary:
      "list hook handler registrations (hook, name, priority, timeout, version, failure mode, match, lease)",
    usage: "geode handlers ls [<HookName>] [--json]",
    load: async () => (await import("./handlers.js")).handlersLsCommand,
  },
  {
    path: ["handlers", "rm"],
    summary: "delete a hook handler registration (e.g. a crashed failure_mode closed guard, or a webhook)",
    usage: "geode handlers rm <HookName> <handler>",
    load: async () => (await import("./handlers.js")).handlersRmCommand,
  },
  {
    path: ["health"],
    summary: "ask services for their health (exit 0 when all answer ok); a container health check",
    usage: "geode health [<service>...] [--timeout <ms>] [--json]",
    load: async () => (await import("./health.js")).healthCommand,
  },
  {
    path: ["up"],
    summary: "run every service in the foreground (starting a local nats-server if needed); Ctrl-C stops all",
    usage: "geode up [--only <service,...>] [--ready-timeout <ms>]",
    load: async () => (await import("./up.js")).upCommand,
  },
  {
    path: ["replay"],
    summary: "rebuild the Postgres projection from the event streams (idempotent)",
    usage: "geode replay [--stream events|timeline] [--from-seq N] [--rebuild] [--batch N]",
    load: async () => (await import("./replay.js")).replayCommand,
  },
  {
    path: ["events", "tail"],
    summary: "follow runtime events (or --timeline records) live, one line each",
    usage: "geode events tail [--event X] [--session S] [--timeline] [--from-seq N] [--limit N]",
    load: async () => (await import("./events.js")).eventsTailCommand,
  },
  {
    path: ["prune"],
    summary: "delete projection rows past their retention bucket (audit 180 d, ops 30 d, debug 7 d)",
    usage: "geode prune",
    load: async () => (await import("./prune.js")).pruneCommand,
  },
  {
    path: ["approvals", "watch"],
    summary: "answer tool approval requests interactively, or --auto allow|deny",
    usage: "geode approvals watch [--auto allow|deny] [--approver <name>] [--count <n>]",
    load: async () => (await import("./approvals.js")).approvalsWatchCommand,
  },
  {
    path: ["receipts", "ls"],
    summary: "list tool admission receipts (admitted: running while its lease is live, else outcome unknown)",
    usage: "geode receipts ls [--state admitted|completed|failed] [--json]",
    load: async () => (await import("./receipts.js")).receiptsLsCommand,
  },
  {
    path: ["receipts", "show"],
    summary: "print one receipt (by operation key) as JSON",
    usage: "geode receipts show <key>",
    load: async () => (await import("./receipts.js")).receiptsShowCommand,
  },
  {
    path: ["receipts", "resolve"],
    summary: "resolve an indeterminate receipt as completed or failed (recorded as an event)",
    usage: "geode receipts resolve <key> --as completed|failed [--reason <text>] [--by <operator>]",
    load: async () => (await import("./receipts.js")).receiptsResolveCommand,
  },
  {
    path: ["agents", "add"],
    summary: "create an agent for the agent gateway and print its bearer token (once)",
    usage: "geode agents add <name> [--group <group>]…",
    load: async () => (await import("./agents.js")).agentsAddCommand,
  },
  {
    path: ["agents", "ls"],
    summary: "list the agents allowed to call the agent gateway",
    usage: "geode agents ls [--json]",
    load: async () => (await import("./agents.js")).agentsLsCommand,
  },
  {
    path: ["agents", "rm"],
    summary: "remove an agent: its token stops working at once",
    usage: "geode agents rm <name>",
    load: async () => (await import("./agents.js")).agentsRmCommand,
  },
  {
    path: ["policy", "add"],
    summary:
      "check a Cedar policy set against the schema and store it (the policy-guard applies it within a second)",
    usage:
      "geode policy add <name> <file> [--mode audit|enforce] | geode policy add --pack <pack> [--mode audit|enforce]",
    load: async () => (await import("./policy.js")).policyAddCommand,
  },
  {
    path: ["policy", "ls"],
    summary: "list the stored policy sets with their mode, digest and last change",
    usage: "geode policy ls [--json]",
    load: async () => (await import("./policy.js")).policyLsCommand,
  },
  {
    path: ["policy", "show"],
    summary: "print a stored policy set",
    usage: "geode policy show <name>",
    load: async () => (await import("./policy.js")).policyShowCommand,
  },
  {
    path: ["policy", "rm"],
    summary: "remove a stored policy set",
    usage: "geode policy rm <name>",
    load: async () => (await import("./policy.js")).policyRmCommand,
  },
  {
    path: ["policy", "packs"],
    summary: "list the policy packs shipped with GEODE",
    usage: "geode policy packs",
    load: async () => (await import("./policy.js")).policyPacksCommand,
  },
  {
    path: ["policy", "test"],
    summary:
      "evaluate one hook call against a pack, a file or the stored sets, or with --live through the running guard (exit 3 on block/deny)",
    usage:
      "geode policy test [--pack <pack> | --file <file> | --live] --hook <HookName> --payload JSON|@file [--agent <name>] [--group <group>]… [--agent-kind <kind>] [--json]",
    load: async () => (await import("./policy-test.js")).policyTestCommand,
  },
  {
    path: ["mcp", "add"],
    summary:
      "add (or replace) an upstream MCP server the mcp-bridge connects to: a stdio command or an HTTP URL",
    usage:
      "geode mcp add <name> [--tools <glob>]… [--effect '<glob>=read|mutation|communication|admin']… [--approve <glob>]… [--group <group>]… ([--env <VAR>]… -- <command> [args…] | --url <http(s)://…> [--header '<Header>=$VAR']…)",
    load: async () => (await import("./mcp.js")).mcpAddCommand,
  },
  {
    path: ["mcp", "ls"],
    summary: "list the upstream MCP servers with their state, tools and last error (from the mcp-bridge)",
    usage: "geode mcp ls [--json]",
    load: async () => (await import("./mcp.js")).mcpLsCommand,
  },
  {
    path: ["mcp", "tools"],
    summary: "list the registered MCP tools (name, upstream tool, effect, approval, annotations)",
    usage: "geode mcp tools [<server>] [--json]",
    load: async () => (await import("./mcp.js")).mcpToolsCommand,
  },
  {
    path: ["mcp", "rm"],
    summary: "remove an upstream MCP server: the mcp-bridge stops it and removes its tools",
    usage: "geode mcp rm <name>",
    load: async () => (await import("./mcp.js")).mcpRmCommand,
  },
  {
    path: ["mcp", "stdio"],
    summary:
      "an MCP server on stdio forwarding to the agent gateway's /v1/mcp with GEODE_AGENT_TOKEN (for clients that start only stdio servers)",
    usage: "geode mcp stdio [--url <gateway url>]",
    load: async () => (await import("./mcp-stdio.js")).mcpStdioCommand,
  },
  {
    path: ["llm", "add"],
    summary:
      "add (or replace) a model provider the agent gateway fronts; the key stays in the gateway's environment",
    usage:
      "geode llm add <name> --kind openai|anthropic|gemini --url <base url> --key-env <VAR> [--model <glob>]…",
    load: async () => (await import("./llm.js")).llmAddCommand,
  },
  {
    path: ["llm", "ls"],
    summary: "list the model providers and the price table",
    usage: "geode llm ls [--json]",
    load: async () => (await import("./llm.js")).llmLsCommand,
  },
  {
    path: ["llm", "rm"],
    summary: "remove a model provider",
    usage: "geode llm rm <name>",
    load: async () => (await import("./llm.js")).llmRmCommand,
  },
  {
    path: ["llm", "price"],
    summary: "set the price of a model (or glob), USD per million input, cached-input and output tokens",
    usage:
      "geode llm price <model> --input <usd> --output <usd> [--cached <usd>] | geode llm price <model> --rm",
    load: async () => (await import("./llm.js")).llmPriceCommand,
  },
  {
    path: ["budget", "set"],
    summary: "set a spend, token or request-rate budget of an agent, group or session",
    usage:
      "geode budget set <agent|group|session>.<name> [--usd X] [--tokens N] [--window 1h|1d|30d|session] [--soft P] [--rpm N]",
    load: async () => (await import("./budget.js")).budgetSetCommand,
  },
  {
    path: ["budget", "ls"],
    summary: "list the budgets with what each has used in its current window",
    usage: "geode budget ls [--json]",
    load: async () => (await import("./budget.js")).budgetLsCommand,
  },
  {
    path: ["budget", "rm"],
    summary: "remove a budget",
    usage: "geode budget rm <scope>.<name>",
    load: async () => (await import("./budget.js")).budgetRmCommand,
  },
  {
    path: ["ns", "ls"],
    summary:
      "list namespaces found in NATS and Postgres (streams, buckets, replicas, messages, bytes, activity rows)",
    usage: "geode ns ls [--json]",
    load: async () => (await import("./ns.js")).nsLsCommand,
  },
  {
    path: ["ns", "rm"],
    summary: "delete a namespace: its streams, KV buckets, Postgres schema and run files (needs --yes)",
    usage: "geode ns rm <namespace> --yes [--force]",
    load: async () => (await import("./ns.js")).nsRmCommand,
  },
  {
    path: ["connect", "claude-code"],
    summary:
      "print (or --write into a settings file) the Claude Code hooks that go through the agent gateway, fail-closed unless --fail-open; --check proves Claude Code runs them",
    usage:
      "geode connect claude-code [--url <gateway url>] [--write <settings.json>] [--fail-open] [--check] | --mcp [--url <gateway url>] [--write <mcp.json>] [--print | --check] | --llm <provider> [--url <gateway url>] [--write <file>] [--print]",
    load: async () => withMcp("claude-code", (await import("./connect.js")).connectClaudeCodeCommand),
  },
  {
    path: ["connect", "codex"],
    summary:
      "print (or --write into a Codex config, trusted; --managed: as managed hooks) the Codex hooks that go through the agent gateway; --check proves Codex runs them",
    usage:
      "geode connect codex [--url <gateway url>] [--write <config.toml>] [--managed] [--fail-open] [--check] [--codex <codex binary>] | --mcp [--url <gateway url>] [--write <config.toml>] [--print | --check] | --llm <provider> [--url <gateway url>] [--write <file>] [--print]",
    load: async () => withMcp("codex", (await import("./connect-codex.js")).connectCodexCommand),
  },
  {
    path: ["connect", "gemini-cli"],
    summary:
      "print (or --write into a Gemini CLI settings file; --system: its system settings) the Gemini CLI hooks that go through the agent gateway; --check proves Gemini runs them",
    usage:
      "geode connect gemini-cli [--url <gateway url>] [--write <settings.json>] [--system] [--fail-open] [--check] | --mcp [--url <gateway url>] [--write <settings.json>] [--print | --check] | --llm <provider> [--url <gateway url>] [--write <file>] [--print]",
    load: async () =>
      withMcp("gemini-cli", (await import("./connect-gemini-cli.js")).connectGeminiCliCommand),
  },
  {
    path: ["connect", "copilot"],
    summary:
      "write (or --print) the Copilot CLI hooks that go through the agent gateway into ~/.copilot/hooks/geode.json (or --write PATH); --check proves Copilot runs them",
    usage:
      "geode connect copilot [--url <gateway url>] [--write <hooks.json>] [--fail-open] [--check] [--print] | --mcp [--url <gateway url>] [--write <mcp-config.json>] [--print | --check] | --llm <provider> [--url <gateway url>] [--write <file>] [--print]",
    load: async () => withMcp("copilot", (await import("./connect-copilot.js")).connectCopilotCommand),
  },
  {
    path: ["connect", "qwen-code"],
    summary:
      "print (or --write into a Qwen Code settings file; --system: its system settings) the Qwen Code hooks that go through the agent gateway; --check proves Qwen Code runs them",
    usage:
      "geode connect qwen-code [--url <gateway url>] [--write <settings.json>] [--system] [--fail-open] [--check] | --mcp [--url <gateway url>] [--write <settings.json>] [--print | --check] | --llm <provider> [--url <gateway url>] [--write <file>] [--print]",
    load: async () => withMcp("qwen-code", (await import("./connect-qwen-code.js")).connectQwenCodeCommand),
  },
  {
    path: ["connect", "opencode"],
    summary:
      "place the opencode plugin that goes through the agent gateway beside ~/.config/opencode/opencode.json (or --write PATH; --managed: /etc/opencode) and load it there; --check proves opencode runs it",
    usage:
      "geode connect opencode [--url <gateway url>] [--write <opencode.json>] [--managed] [--fail-open] [--check] [--print] | --mcp [--url <gateway url>] [--write <opencode.json>] [--print | --check] | --llm <provider> [--url <gateway url>] [--write <file>] [--print]",
    load: async () => withMcp("opencode", (await import("./connect-opencode.js")).connectOpencodeCommand),
  },
  {
    path: ["hook-shim"],
    summary: "command hook for agents: stdin hook input → agent gateway → stdout (exit 2 on deny/block)",
    usage:
      "geode hook-shim [--agent claude-code|codex|gemini-cli|copilot|qwen-code] [--url <gateway url>] [--fail-closed] [--timeout-ms <ms>]",
    load: async () => (await import("./hook-shim.js")).hookShimCommand,
  },
  {
    path: ["console"],
    summary: "serve the operator console on loopback (needs GEODE_CONSOLE_TOKEN)",
    usage: "geode console [--port <port>] [--host 127.0.0.1]",
    load: async () => (await import("./console.js")).consoleCommand,
  },
];
