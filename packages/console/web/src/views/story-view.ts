import type { ConsoleSessionStory, ConsoleStoryStep } from "@geode/contracts";
import { api } from "../api.js";
import { poll, show } from "../app.js";
import { counted, duration, el, table, time } from "../dom.js";
import { badge, isStop } from "./verdicts.js";

const KIND_LABEL: Record<ConsoleStoryStep["kind"], string> = {
  prompt: "Prompt",
  tool_call: "Tool call",
  compaction: "Compaction",
  subagent: "Sub-agent",
  verification: "Verification",
  llm_call: "Model call",
};

/** A model call's tokens and cost: `12 in (2 cached) · 8 out · $0.000104`. */
function llmUse(l: NonNullable<ConsoleStoryStep["llm"]>): string | null {
  if (l.input_tokens === null && l.output_tokens === null) return null;
  const cached = l.cached_input_tokens ? ` (${l.cached_input_tokens.toLocaleString("en-US")} cached)` : "";
  return `${(l.input_tokens ?? 0).toLocaleString("en-US")} in${cached} · ${(l.output_tokens ?? 0).toLocaleString("en-US")} out · ${usd(l.cost_usd ?? 0)}`;
}

/** USD as the console shows it: cents for sums, six decimals for one call's fractions of a cent. */
export const usd = (x: number) => (x === 0 ? "$0" : x >= 0.01 ? `$${x.toFixed(2)}` : `$${x.toFixed(6)}`);

/** What a step was about, in a few words (never a prompt's text: only its length); an MCP call is `server · tool`. */
function what(s: ConsoleStoryStep): string {
  switch (s.kind) {
    case "prompt":
      return s.length === null ? "a prompt" : counted(s.length, "character");
    case "tool_call":
      if (s.mcp) return `${s.mcp.server} · ${s.mcp.tool}`;
      return `${s.tool_name ?? "(tool not recorded)"}${s.tool_kind ? ` · ${s.tool_kind}` : ""}`;
    case "subagent":
      return s.tool_name ?? "a sub-agent";
    case "verification":
      return s.outcome === null ? "verified" : `built-in check ${s.outcome}`;
    case "llm_call":
      return `${s.llm?.model ?? "(model not recorded)"}${s.llm?.provider ? ` · ${s.llm.provider}` : ""}`;
    default:
      return "context compacted";
  }
}

/** `+1,234 ms` after the session started. */
const offset = (ms: number) => `+${ms.toLocaleString("en-US")} ms`;

/** A call that ran with nobody governing it: its PreToolUse never reached the plane. */
const gapNote = () =>
  el("div", { class: "step-gap" }, badge("ungoverned"), " its PreToolUse never reached the plane");

function stepRow(s: ConsoleStoryStep): HTMLTableRowElement {
  const stop = isStop(s.verdict) || s.governance_gap;
  return el(
    "tr",
    {
      "data-kind": s.kind,
      ...(s.tool_call_id ? { "data-call": s.tool_call_id } : {}),
      ...(stop ? { class: "bad-row" } : {}),
    },
    el("td", { class: "num", title: time(s.ts) }, offset(s.at_ms)),
    el("td", {}, KIND_LABEL[s.kind]),
    el(
      "td",
      {},
      s.mcp
        ? el("span", { class: "step-mcp", title: `MCP tool ${s.tool_name ?? ""}`.trim() }, what(s))
        : what(s),
      s.target === null ? null : el("code", { class: "step-target", title: s.target }, s.target),
      s.llm && llmUse(s.llm) !== null ? el("div", { class: "step-llm" }, llmUse(s.llm)) : null,
    ),
    el(
      "td",
      {},
      badge(s.verdict),
      s.governance_gap ? gapNote() : null,
      s.reason === null ? null : el("div", { class: "step-reason", title: s.reason }, s.reason),
    ),
    el("td", {}, s.decided_by ?? "-"),
    el("td", {}, s.outcome ?? "-"),
    el("td", { class: "num" }, duration(s.duration_ms)),
  );
}

function render(story: ConsoleSessionStory, head: HTMLElement, steps: HTMLElement, raw: HTMLElement): void {
  const s = story.session;
  const live = s.status === "active" || s.status === "paused";
  const end = s.ended_at ?? Date.now();
  head.replaceChildren(
    el(
      "dl",
      { class: "facts" },
      el("dt", {}, "Agent"),
      el("dd", {}, `${s.agent ?? "(runtime)"} · ${s.agent_kind}`),
      el("dt", {}, "Status"),
      el("dd", {}, badge(s.status), live ? el("span", { id: "story-live", class: "live" }, " live") : null),
      el("dt", {}, "Started"),
      el(
        "dd",
        {},
        `${time(s.started_at)} · ${live ? "running for" : "took"} ${duration(end - s.started_at)}`,
      ),
      el("dt", {}, "Steps"),
      el(
        "dd",
        {},
        `${counted(s.prompts, "prompt")}, ${counted(s.tool_calls, "tool call")}, `,
        s.blocked > 0 ? el("strong", { class: "bad" }, `${s.blocked} blocked`) : "0 blocked",
        `, ${s.approved} approved, ${s.denied} denied`,
        s.gaps > 0
          ? el("strong", { class: "bad", id: "story-gaps" }, `, ${counted(s.gaps, "ungoverned call")}`)
          : null,
      ),
    ),
  );
  steps.replaceChildren(
    story.steps.length === 0
      ? el("p", { class: "empty" }, "Nothing recorded yet.")
      : table(["at", "step", "what", "verdict", "decided by", "outcome", "took"], story.steps.map(stepRow), {
          class: "story",
        }),
  );
  raw.replaceChildren(
    el("h3", {}, "Raw events"),
    story.session.run_ids.length === 0
      ? el("p", { class: "empty" }, "The session's records name no run.")
      : el(
          "ul",
          {},
          ...story.session.run_ids.map((id) =>
            el(
              "li",
              {},
              el("a", { href: `#run/${encodeURIComponent(id)}` }, `Every event and record of run ${id}`),
            ),
          ),
        ),
  );
}

/** One session as a readable sequence; refreshed while the session is active. */
export function storyView(sessionId: string): void {
  const head = el("div");
  const steps = el("div");
  const raw = el("div", { class: "raw" });
  show(
    `Session ${sessionId}`,
    el("p", {}, el("a", { href: "#sessions", class: "back" }, "← All sessions")),
    head,
    steps,
    raw,
  );
  poll(async () => {
    const story = await api<ConsoleSessionStory>(`/api/sessions/${encodeURIComponent(sessionId)}/story`);
    render(story, head, steps, raw);
    return story.session.status === "active" || story.session.status === "paused";
  }, 2000);
}
