/**
 * What every view shares: the main area, the status line, polling that stops when the operator
 * leaves the view, and what happens when the sign-in lapsed.
 */
import { ApiError, type Page } from "./api.js";
import { button, el } from "./dom.js";

export const main = document.getElementById("main") as HTMLElement;
const status = document.getElementById("status") as HTMLElement;

/** Rows per page of the round-1 lists. */
export const PAGE_SIZE = 50;

let stops: Array<() => void> = [];
let unauthorized: () => void = () => undefined;

/** Says something on the status line (`role=status`, read out by screen readers). */
export function say(text: string, bad = false): void {
  status.textContent = text;
  status.className = bad ? "bad" : "";
}

/** A failed call: a lapsed sign-in shows the sign-in page; anything else is said. */
export function failed(err: unknown): void {
  if (err instanceof ApiError && err.status === 401) unauthorized();
  else say(err instanceof Error ? err.message : String(err), true);
}

export function onUnauthorized(show: () => void): void {
  unauthorized = show;
}

/** Runs `stop` when the operator leaves the current view. */
export function onLeave(stop: () => void): void {
  stops.push(stop);
}

/** Stops what the current view started (its polls, its live streams). */
export function leaveView(): void {
  const current = stops;
  stops = [];
  for (const stop of current) stop();
}

/** Runs `load` now and every `ms` until the view changes (or `load` returns false). */
export function poll(load: () => Promise<unknown>, ms = 1500): void {
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const tick = async () => {
    if (stopped) return;
    const more = await load().catch((err: unknown) => {
      failed(err);
      return true;
    });
    if (!stopped && more !== false) timer = setTimeout(tick, ms);
  };
  timer = setTimeout(tick, 0);
  onLeave(() => {
    stopped = true;
    clearTimeout(timer);
  });
}

/** Shows a view: its heading and parts; the heading takes the focus so a screen reader announces it. */
export function show(title: string, ...parts: Array<Node | string | null>): HTMLHeadingElement {
  const heading = el("h2", { tabindex: "-1" }, title);
  main.replaceChildren(heading, ...parts.filter((p): p is Node | string => p !== null));
  heading.focus({ preventScroll: true });
  return heading;
}

/** Previous / next buttons of an offset-paged list. */
export function pager(page: Page<unknown>, go: (offset: number) => void): HTMLElement {
  const prev = page.offset > 0 ? button("Previous", () => go(Math.max(0, page.offset - page.limit))) : null;
  const next = page.next_offset !== null ? button("Next", () => go(page.next_offset!)) : null;
  const shown = page.items.length === 0 ? "0" : `${page.offset + 1}–${page.offset + page.items.length}`;
  return el("div", { class: "pager" }, prev, next, `${shown} of ${page.total}`);
}

/**
 * Asks the operator to confirm an action in a modal dialog (keyboard: Tab between the buttons,
 * Escape cancels); resolves true when confirmed.
 */
export function confirmDialog(question: string, action: string): Promise<boolean> {
  return new Promise((resolve) => {
    const yes = el("button", { type: "button", class: "deny" }, action);
    const no = el("button", { type: "button" }, "Cancel");
    const text = el("p", { id: "confirm-text" }, question);
    const dialog = el("dialog", { "aria-labelledby": "confirm-text", class: "confirm" }, text, yes, no);
    const done = (ok: boolean) => {
      dialog.close();
      dialog.remove();
      resolve(ok);
    };
    yes.addEventListener("click", () => done(true));
    no.addEventListener("click", () => done(false));
    dialog.addEventListener("cancel", () => done(false));
    document.body.append(dialog);
    dialog.showModal();
    no.focus();
  });
}
