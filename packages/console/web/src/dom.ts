/**
 * DOM helpers. Data from the plane (payloads, handler reasons, pending text) only ever reaches the
 * page as text nodes: nothing here sets innerHTML.
 */
export type Child = Node | string | number | null | undefined | false;

export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    node.append(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
  }
  return node;
}

/** `1 prompt`, `2 prompts`: a count with its noun (`plural` for an irregular one). */
export const counted = (n: number, noun: string, plural = `${noun}s`) =>
  `${n.toLocaleString("en-US")} ${n === 1 ? noun : plural}`;

export function button(
  label: string,
  onClick: () => void,
  attrs: Record<string, string> = {},
): HTMLButtonElement {
  const b = el("button", { type: "button", ...attrs }, label);
  b.addEventListener("click", onClick);
  return b;
}

export function table(headers: string[], rows: HTMLTableRowElement[], attrs: Record<string, string> = {}) {
  return el(
    "table",
    attrs,
    el("thead", {}, el("tr", {}, ...headers.map((h) => el("th", {}, h)))),
    el("tbody", {}, ...rows),
  );
}

export const time = (ms: number | null | undefined) =>
  ms == null
    ? "-"
    : new Date(ms)
        .toISOString()
        .replace("T", " ")
        .replace(/\.\d+Z$/, "Z");

export const age = (ms: number) =>
  ms < 1000 ? `${ms} ms` : ms < 120_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms / 60_000)} min`;

/** A short one-line view of a payload. */
export function summary(payload: Record<string, unknown>): string {
  const parts: string[] = [];
  for (const [k, v] of Object.entries(payload)) {
    if (k === "_redacted_fields") continue;
    const text = typeof v === "string" ? v : JSON.stringify(v);
    parts.push(`${k}=${text.length > 80 ? `${text.slice(0, 79)}…` : text}`);
  }
  const line = parts.join(" ");
  return line.length > 240 ? `${line.slice(0, 239)}…` : line;
}

/** An instant to the millisecond (UTC). */
export const timeMs = (ms: number | null | undefined) =>
  ms == null ? "-" : new Date(ms).toISOString().replace("T", " ");

/** A length of time the way people read it: 350 ms, 4.2 s, 3 min 4 s, 2 h 5 min. */
export function duration(ms: number | null | undefined): string {
  if (ms == null) return "-";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const s = Math.round(ms / 1000);
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

/** A long id cut to its first characters (the whole id stays in the element's title). */
export const shortId = (id: string, keep = 13) => (id.length > keep + 1 ? `${id.slice(0, keep)}…` : id);
