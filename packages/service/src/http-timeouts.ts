import type { ServerOptions } from "node:http";
import { type EnvVar, envVar, read } from "@geode/env";

/**
 * How long an HTTP client may take, in ms: to send a request's headers, to send the whole request
 * (headers and body; the server's own time to answer does not count), and to leave a keep-alive
 * connection idle between requests. A client over the first two gets 408 and its socket closed.
 */
export interface HttpTimeouts {
  headersMs: number;
  requestMs: number;
  idleMs: number;
}

const seconds = (ms: number) => `\`${ms}\` (${ms / 1000} s)`;

/**
 * The three variables of a component's HTTP server, `{prefix}_HEADERS_TIMEOUT_MS`,
 * `{prefix}_REQUEST_TIMEOUT_MS` and `{prefix}_IDLE_TIMEOUT_MS`, for its `envSpec`; `who` names
 * the component in their documentation.
 */
export function httpTimeoutVars(
  prefix: string,
  who: string,
  defaults: HttpTimeouts,
): { headersMs: EnvVar<number>; requestMs: EnvVar<number>; idleMs: EnvVar<number> } {
  return {
    headersMs: envVar(`${prefix}_HEADERS_TIMEOUT_MS`, read.int(defaults.headersMs, 1), {
      default: seconds(defaults.headersMs),
      meaning: `how long a client may take to send a request's headers, ms; then 408 and the socket is closed (${who})`,
    }),
    requestMs: envVar(`${prefix}_REQUEST_TIMEOUT_MS`, read.int(defaults.requestMs, 1), {
      default: seconds(defaults.requestMs),
      meaning: `how long a client may take to send a whole request, body included (not the time to answer it), ms; at least the headers' timeout; then 408 and the socket is closed (${who})`,
    }),
    idleMs: envVar(`${prefix}_IDLE_TIMEOUT_MS`, read.int(defaults.idleMs, 1), {
      default: seconds(defaults.idleMs),
      meaning: `how long a keep-alive connection may stay idle between requests, ms (${who})`,
    }),
  };
}

/** What is wrong across the timeouts (Node refuses a headers timeout over the request timeout). */
export function checkHttpTimeouts(prefix: string, t: HttpTimeouts): string | undefined {
  return t.headersMs > t.requestMs
    ? `${prefix}_HEADERS_TIMEOUT_MS (${t.headersMs}) must not exceed ${prefix}_REQUEST_TIMEOUT_MS (${t.requestMs})`
    : undefined;
}

/** Options for `http.createServer` that enforce `t`. */
export function httpServerOptions(t: HttpTimeouts): ServerOptions {
  return {
    headersTimeout: t.headersMs,
    requestTimeout: t.requestMs,
    keepAliveTimeout: t.idleMs,
    // Node looks for requests past their time only this often (30 s by default, which would let a
    // slow client stay that much longer than configured).
    connectionsCheckingInterval: Math.min(1_000, Math.max(50, Math.floor(t.headersMs / 4))),
  };
}
