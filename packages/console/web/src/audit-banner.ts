/**
 * The red banner above every view while the notary reports a gap in a log, falls behind, or does
 * not answer (`GET /api/audit`'s `alerts`), polled for as long as the operator is signed in.
 */
import type { ConsoleAudit } from "@geode/contracts";
import { ApiError, api } from "./api.js";
import { el } from "./dom.js";

const banner = document.getElementById("audit-banner") as HTMLElement;
const EVERY_MS = 5_000;
let timer: ReturnType<typeof setTimeout> | undefined;

/** Shows `alerts` (as text), or hides the banner when there are none. */
export function showAuditAlerts(alerts: readonly string[]): void {
  banner.replaceChildren(...alerts.map((a) => el("p", {}, a)));
  banner.hidden = alerts.length === 0;
}

/** Polls the audit state until `stopAuditBanner`; a lapsed sign-in or a 503 leaves it as it was. */
export function startAuditBanner(): void {
  stopAuditBanner();
  const tick = async () => {
    try {
      showAuditAlerts((await api<ConsoleAudit>("/api/audit")).alerts);
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) {
        showAuditAlerts([]);
        return;
      }
    }
    timer = setTimeout(() => void tick(), EVERY_MS);
  };
  void tick();
}

export function stopAuditBanner(): void {
  clearTimeout(timer);
  timer = undefined;
}
