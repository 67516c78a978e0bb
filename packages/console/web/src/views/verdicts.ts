/**
 * How verdicts and statuses look: each with an icon and a word, never colour alone (the colour
 * only repeats what the text says). The icons are in the fonts every desktop has (no emoji font).
 */
import { el } from "../dom.js";

const LOOK: Record<string, { icon: string; tone: "bad" | "good" | "warn" | "plain" }> = {
  blocked: { icon: "⊘", tone: "bad" },
  denied: { icon: "✕", tone: "bad" },
  approved: { icon: "✔", tone: "good" },
  allowed: { icon: "✓", tone: "plain" },
  rewritten: { icon: "✎", tone: "warn" },
  active: { icon: "●", tone: "good" },
  paused: { icon: "⏸", tone: "warn" },
  completed: { icon: "■", tone: "plain" },
  error: { icon: "✖", tone: "bad" },
  accept: { icon: "✓", tone: "plain" },
  revise: { icon: "↻", tone: "warn" },
  escalate: { icon: "⚠", tone: "bad" },
  escalate_budget_exhausted: { icon: "⚠", tone: "bad" },
  built_in_fail: { icon: "✖", tone: "bad" },
  failed: { icon: "✖", tone: "bad" },
  enforce: { icon: "●", tone: "good" },
  audit: { icon: "◐", tone: "warn" },
  would_block: { icon: "⊘", tone: "warn" },
  would_deny: { icon: "✕", tone: "warn" },
  ok: { icon: "✓", tone: "good" },
  problem: { icon: "✖", tone: "bad" },
  ungoverned: { icon: "⚠", tone: "bad" },
  connected: { icon: "●", tone: "good" },
  connecting: { icon: "◌", tone: "warn" },
  unknown: { icon: "?", tone: "warn" },
  "not seen": { icon: "?", tone: "warn" },
  refused: { icon: "⊘", tone: "bad" },
  warning: { icon: "⚠", tone: "warn" },
  spent: { icon: "⊘", tone: "bad" },
};

/** A badge: icon (hidden from screen readers) and the word itself. */
export function badge(word: string | null): HTMLElement | string {
  if (word === null) return "-";
  const look = LOOK[word] ?? { icon: "", tone: "plain" as const };
  return el(
    "span",
    { class: `badge ${look.tone}`, "data-verdict": word },
    look.icon ? el("span", { class: "icon", "aria-hidden": "true" }, `${look.icon} `) : null,
    word.replaceAll("_", " "),
  );
}

/** True for the verdicts a reader must not miss. */
export const isStop = (verdict: string | null) => verdict === "blocked" || verdict === "denied";
