import type { ConsoleMe } from "@geode/contracts";
import { ApiError, api } from "./api.js";
import { failed, leaveView, onUnauthorized, say } from "./app.js";
import { showAuditAlerts, startAuditBanner, stopAuditBanner } from "./audit-banner.js";
import { el } from "./dom.js";
import { loginView } from "./views/login-view.js";
import { LANDING, VIEWS } from "./views.js";

const nav = document.getElementById("nav") as HTMLElement;
const links = document.getElementById("nav-links") as HTMLElement;

links.replaceChildren(
  ...VIEWS.filter((v) => v.label).map((v) =>
    el("a", { href: `#${v.route}`, "data-page": v.route }, v.label ?? v.route),
  ),
);

function showLogin(): void {
  leaveView();
  stopAuditBanner();
  showAuditAlerts([]);
  nav.hidden = true;
  loginView(start);
}
onUnauthorized(showLogin);

/** Shows the view the address names: `#route`, `#route/arg` or `#route?query`. */
function route(): void {
  leaveView();
  say("");
  const hash = location.hash.replace(/^#/, "") || LANDING;
  const [path = "", query = ""] = hash.split("?", 2) as [string, string?];
  const slash = path.indexOf("/");
  const name = slash < 0 ? path : path.slice(0, slash);
  let arg = "";
  try {
    arg = slash < 0 ? "" : decodeURIComponent(path.slice(slash + 1));
  } catch {
    say("That address is not valid.", true);
  }
  const view = VIEWS.find((v) => v.route === name) ?? VIEWS.find((v) => v.route === LANDING)!;
  const lit = view.nav ?? view.route;
  for (const a of links.querySelectorAll("a")) {
    const on = a.dataset["page"] === lit;
    a.classList.toggle("active", on);
    if (on) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  view.render(arg, query);
}

async function start(): Promise<void> {
  try {
    const me = await api<ConsoleMe>("/api/me");
    (document.getElementById("who") as HTMLElement).textContent = me.operator ?? "";
    nav.hidden = false;
    route();
    startAuditBanner();
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) showLogin();
    else failed(err);
  }
}

document.getElementById("logout")?.addEventListener("click", () => {
  void api("/api/logout", {}).finally(showLogin);
});
window.addEventListener("hashchange", () => {
  if (!nav.hidden) route();
});
void start();
