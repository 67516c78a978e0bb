import { envSpec, envVar, read } from "@geode/env";
import { checkHttpTimeouts, type HttpTimeouts, httpTimeoutVars } from "@geode/service";

/**
 * A browser on the same machine sends its requests at once: 10 s for the headers and 30 s for a
 * whole request leave room, and a client that trickles bytes is cut off. Idle keep-alive
 * connections are closed after Node's usual 5 s (live views hold their own open streams).
 */
export const DEFAULT_CONSOLE_TIMEOUTS: HttpTimeouts = { headersMs: 10_000, requestMs: 30_000, idleMs: 5_000 };
const TIMEOUT_VARS = httpTimeoutVars("GEODE_CONSOLE", "console", DEFAULT_CONSOLE_TIMEOUTS);

/** The console's own environment (with COMMON_ENV; docs/operations.md, "Configuration"). */
export const CONSOLE_ENV = envSpec(
  {
    token: envVar("GEODE_CONSOLE_TOKEN", read.optional(), {
      default: "unset: `geode console` refuses to start",
      meaning:
        "the operator console's token: a bearer token for `/api/`, or entered once on the page (never in URLs or logs)",
    }),
    headersTimeoutMs: TIMEOUT_VARS.headersMs,
    requestTimeoutMs: TIMEOUT_VARS.requestMs,
    idleTimeoutMs: TIMEOUT_VARS.idleMs,
  },
  (v) => checkHttpTimeouts("GEODE_CONSOLE", consoleTimeouts(v)),
);

/** The HTTP timeouts of what `CONSOLE_ENV` read. */
export function consoleTimeouts(v: {
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  idleTimeoutMs: number;
}): HttpTimeouts {
  return { headersMs: v.headersTimeoutMs, requestMs: v.requestTimeoutMs, idleMs: v.idleTimeoutMs };
}
