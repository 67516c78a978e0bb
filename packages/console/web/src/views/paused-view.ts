import type { ConsoleParkedTurn, ConsoleSessionResolve } from "@geode/contracts";
import { api, type Page } from "../api.js";
import { failed, PAGE_SIZE, pager, say, show } from "../app.js";
import { button, el, table } from "../dom.js";

/** Paused sessions: root turns whose candidate waits for its external owner; deliver or revise. */
export function pausedView(offset = 0): void {
  const list = el("div");
  show("Paused sessions awaiting verification", list);
  const load = async () => {
    const page = await api<Page<ConsoleParkedTurn>>(
      `/api/sessions?status=paused&limit=${PAGE_SIZE}&offset=${offset}`,
    );
    const resolve = async (p: ConsoleParkedTurn, action: "deliver" | "revise", instruction: string) => {
      try {
        const body: ConsoleSessionResolve = {
          session_id: p.session_id,
          turn_id: p.turn_id,
          action,
          ...(action === "revise" ? { instruction } : {}),
        };
        await api("/api/sessions/resolve", body);
        say(`${action === "deliver" ? "Delivered" : "Sent back"} ${p.session_id} / ${p.turn_id}`);
        await load();
      } catch (err) {
        failed(err);
      }
    };
    const rows = page.items.map((p) => {
      const instruction = el("textarea", {
        rows: "2",
        placeholder: "instruction for a revision",
        "aria-label": `instruction for ${p.session_id}`,
      });
      return el(
        "tr",
        { "data-session": p.session_id },
        el("td", {}, el("a", { href: `#session/${encodeURIComponent(p.session_id)}` }, p.session_id)),
        el("td", {}, p.turn_id),
        el("td", {}, p.policy_action),
        el("td", {}, el("pre", { class: "pending-text" }, p.pending_text)),
        el(
          "td",
          {},
          button("Deliver", () => void resolve(p, "deliver", ""), { class: "allow" }),
          el("br"),
          instruction,
          el("br"),
          button("Revise", () => void resolve(p, "revise", instruction.value)),
        ),
      );
    });
    list.replaceChildren(
      page.total === 0
        ? el("p", { class: "empty" }, "No session is paused.")
        : el(
            "div",
            {},
            table(["session", "turn", "policy action", "pending text", "resolve"], rows),
            pager(page, (o) => pausedView(o)),
          ),
    );
  };
  void load().catch(failed);
}
