import { randomUUID } from "node:crypto";
import {
  type ClientRequest,
  Agent as HttpAgent,
  request as httpRequest,
  type IncomingMessage,
  type ServerResponse,
} from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import type { Logger } from "@geode/bus";
import {
  type Correlation,
  costOf,
  type LlmCallEndedPayload,
  type LlmPriceRecord,
  type LlmProviderKind,
  type LlmProviderRecord,
  priceFor,
  providerAllowsModel,
  sanitizeText,
} from "@geode/contracts";
import {
  BudgetSpendStore,
  BudgetStore,
  LlmPriceStore,
  LlmProviderStore,
  type RecordWatch,
} from "@geode/state";
import { correlationOf } from "../agent-adapter.js";
import type { Plane } from "../plane.js";
import { readBody } from "../read-body.js";
import { type BudgetFinding, BudgetGuard, type Payer } from "./budget-guard.js";
import { HookSessions } from "./hook-sessions.js";
import {
  agentAuthorization,
  DROPPED_RESPONSE_HEADERS,
  errorBody,
  type GatewayErrorCode,
  type ModelCall,
  modelCallOf,
  upstreamHeaders,
} from "./provider-api.js";
import { UsageMeter } from "./usage-meter.js";

/** The LLM endpoints' path prefix: `/v1/llm/{provider}/{path}`. */
export const LLM_PATH_PREFIX = "/v1/llm/";

/** The header an agent may name its session in. */
const SESSION_HEADER = "x-geode-session";
const SESSION_ID = /^[\x21-\x7e]{1,200}$/;

export interface LlmEndpointDeps {
  plane: Plane;
  log: Logger;
  /** The agent an `Authorization` value names, or null. */
  identify(authorization: string | undefined): string | null;
  groupsOf(agent: string): readonly string[] | undefined;
  /** A refused token (logged rate-limited, never the token). */
  refused(remote: string | undefined, path: string, authorization: string | undefined): void;
  /** Where the provider keys are (`key_env` of each record): the gateway's environment. */
  keys: Readonly<Record<string, string | undefined>>;
  maxBodyBytes: number;
  /** Longest wait for the provider's answer to begin, and between two of its chunks. */
  timeoutMs: number;
  /** An agent's calls without a named session form one session until this long passes without one. */
  sessionIdleMs: number;
}

interface CallContext {
  provider: LlmProviderRecord;
  call: ModelCall;
  correlation: Correlation;
  payer: Payer;
  started: number;
}

/**
 * `/v1/llm/{provider}/{path}` (DESIGN section 21): the provider's own API under a prefix. The
 * agent's token is checked and replaced by the provider key, the call forwarded to
 * `{base_url}/{path}`, its answer passed back chunk by chunk as it comes while its usage is read;
 * each model call is refused when a budget is spent and recorded as `llm_call_started` and
 * `llm_call_ended` (or `llm_call_failed`), never with its prompt or completion.
 */
export class LlmEndpoint {
  private readonly providers = new Map<string, LlmProviderRecord>();
  private readonly prices = new Map<string, LlmPriceRecord>();
  private readonly sessions = new Map<string, { session_id: string; last: number }>();
  /** Charges still being written, per agent: the agent's next call waits for them before its check. */
  private readonly charging = new Map<string, Set<Promise<void>>>();
  private watches: RecordWatch[] = [];
  /** Connections to the providers, kept open between calls (no connect, no TLS handshake per call). */
  private readonly httpAgent = new HttpAgent({ keepAlive: true });
  private readonly httpsAgent = new HttpsAgent({ keepAlive: true });

  private constructor(
    private readonly deps: LlmEndpointDeps,
    private readonly budgets: BudgetGuard,
    private readonly hookSessions: HookSessions,
  ) {}

  static async start(deps: LlmEndpointDeps): Promise<LlmEndpoint> {
    const conn = deps.plane.bus;
    const [providers, prices, budgets, spend] = await Promise.all([
      LlmProviderStore.open(conn),
      LlmPriceStore.open(conn),
      BudgetStore.open(conn),
      BudgetSpendStore.open(conn),
    ]);
    const [guard, hookSessions] = await Promise.all([
      BudgetGuard.start(budgets, spend, deps.log),
      HookSessions.start(conn, deps.log, deps.sessionIdleMs),
    ]);
    const endpoint = new LlmEndpoint(deps, guard, hookSessions);
    endpoint.watches = await Promise.all([
      providers.watch(({ key, value, malformed }) => {
        if (malformed) deps.log.warn({ key }, "skipping malformed LLM provider record");
        if (value) endpoint.providers.set(key, value);
        else endpoint.providers.delete(key);
      }),
      prices.watch(({ key, value, malformed }) => {
        if (malformed) deps.log.warn({ key }, "skipping malformed LLM price");
        if (value) endpoint.prices.set(key, value);
        else endpoint.prices.delete(key);
      }),
    ]);
    return endpoint;
  }

  stop(): void {
    for (const w of this.watches) void w.stop();
    this.budgets.stop();
    this.hookSessions.stop();
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }

  /** Serves one request under `/v1/llm/`. */
  async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://gateway");
    const rest = url.pathname.slice(LLM_PATH_PREFIX.length);
    const cut = rest.indexOf("/");
    const name = cut < 0 ? rest : rest.slice(0, cut);
    const path = cut < 0 ? "" : rest.slice(cut + 1);
    const provider = this.providers.get(name);
    const kind = provider?.kind;
    const fail = (
      status: number,
      code: GatewayErrorCode,
      message: string,
      headers: Record<string, string> = {},
    ) => {
      req.resume();
      sendJson(res, status, errorBody(kind, status, code, message), headers);
    };
    if (!provider)
      return fail(
        404,
        "unknown_provider",
        `no LLM provider ${JSON.stringify(sanitizeText(name, 64))} (see 'geode llm ls')`,
      );
    const authorization = agentAuthorization(req.headers, url.searchParams);
    const agent = this.deps.identify(authorization);
    if (agent === null) {
      this.deps.refused(req.socket.remoteAddress, `${LLM_PATH_PREFIX}${name}`, authorization);
      return fail(
        401,
        "invalid_api_key",
        "missing or unknown agent token: use the token of 'geode agents add' as the API key",
        {
          connection: "close",
        },
      );
    }
    const raw = await readBody(req, this.deps.maxBodyBytes);
    if (raw === null)
      return fail(
        413,
        "request_too_large",
        `request body over ${this.deps.maxBodyBytes} bytes (GEODE_LLM_MAX_BODY_BYTES)`,
        {
          connection: "close",
        },
      );
    let body: unknown;
    if (raw.length > 0 && req.method !== "GET") {
      try {
        body = JSON.parse(raw.toString("utf8"));
      } catch {
        body = undefined;
      }
    }
    const call = req.method === "POST" ? modelCallOf(provider.kind, path, body) : null;
    if (call && body === undefined) return fail(400, "invalid_request", "the request body is not JSON");
    if (call && call.model === "") return fail(400, "invalid_request", "the request names no model");
    if (call && !providerAllowsModel(provider, call.model))
      return fail(
        403,
        "model_not_allowed",
        `model ${JSON.stringify(sanitizeText(call.model, 128))} is not offered by provider ${name}`,
      );
    const key = this.deps.keys[provider.key_env];
    if (key === undefined || key === "")
      return fail(
        503,
        "provider_unavailable",
        `the gateway has no key for provider ${name}: $${provider.key_env} is not set in its environment`,
      );
    if (!call) return void this.forward(req, res, provider, path, url.searchParams, raw, key, null);

    const correlation = this.correlation(agent, req.headers[SESSION_HEADER]);
    const payer: Payer = {
      agent,
      groups: this.deps.groupsOf(agent) ?? [],
      session_id: correlation.session_id,
    };
    await this.charged(agent);
    const refusals = await this.budgets.admit(payer);
    if (refusals.length > 0) return this.refuse(res, req, kind, provider, call, payer, correlation, refusals);
    const ctx: CallContext = { provider, call, correlation, payer, started: Date.now() };
    this.deps.plane.emit(
      "llm_call_started",
      { agent, provider: provider.name, model: call.model, stream: call.stream },
      correlation,
    );
    await this.forward(req, res, provider, path, url.searchParams, raw, key, ctx);
  }

  /** A call refused by a budget: 429 with `Retry-After` in the provider's shape, and `cost_limit_exceeded`. */
  private refuse(
    res: ServerResponse,
    req: IncomingMessage,
    kind: LlmProviderKind | undefined,
    provider: LlmProviderRecord,
    call: ModelCall,
    payer: Payer,
    correlation: Correlation,
    refusals: BudgetFinding[],
  ): void {
    const spent = refusals.find((r) => r.reason !== "requests_per_minute");
    const first = spent ?? (refusals[0] as BudgetFinding);
    const retry = Math.max(...refusals.map((r) => r.retry_after_s ?? 1));
    for (const r of refusals)
      this.deps.plane.emit(
        "cost_limit_exceeded",
        { agent: payer.agent, provider: provider.name, model: call.model, ...r },
        correlation,
      );
    const message = spent
      ? `budget ${first.budget} is spent (${first.reason === "limit_usd" ? `$${first.used_usd} of $${first.limit_usd}` : `${first.used_tokens} of ${first.limit_tokens} tokens`} this ${first.window === "session" ? "session" : `${first.window} window`}); retry after ${retry} s`
      : `budget ${first.budget} allows ${first.requests_per_minute} requests per minute; retry after ${retry} s`;
    req.resume();
    sendJson(res, 429, errorBody(kind, 429, spent ? "cost_limit_exceeded" : "rate_limit_exceeded", message), {
      "retry-after": String(retry),
      // The OpenAI and Anthropic SDKs would retry a 429 otherwise: a spent budget does not come back in seconds.
      ...(spent ? { "x-should-retry": "false" } : {}),
    });
  }

  /** Sends the request on to the provider and its answer back, metering a model call. */
  private forward(
    req: IncomingMessage,
    res: ServerResponse,
    provider: LlmProviderRecord,
    path: string,
    query: URLSearchParams,
    raw: Buffer,
    key: string,
    ctx: CallContext | null,
  ): Promise<void> {
    const params = new URLSearchParams(query);
    params.delete("key");
    const qs = params.toString();
    const target = new URL(`${provider.base_url}/${path}${qs === "" ? "" : `?${qs}`}`);
    const https = target.protocol === "https:";
    const send = https ? httpsRequest : httpRequest;
    const agent = https ? this.httpsAgent : this.httpAgent;
    const headers = upstreamHeaders(provider.kind, req.headers, key, raw.length);
    return new Promise<void>((resolve) => {
      let done = false;
      const finish = (outcome: { status: number; meter?: UsageMeter; error?: string }) => {
        if (done) return;
        done = true;
        resolve();
        if (ctx) this.ended(ctx, outcome);
      };
      let upstream: ClientRequest | undefined;
      let meter: UsageMeter | undefined;
      // The agent went away: stop the provider's work too.
      res.once("close", () => {
        if (!res.writableEnded) {
          upstream?.destroy();
          finish({ status: 499, meter, error: "the agent closed the request" });
        }
      });
      const attempt = (retry: boolean) => {
        let answered = false;
        let sent: ClientRequest;
        try {
          sent = send(target, { method: req.method ?? "POST", headers, agent });
        } catch (err) {
          sendJson(
            res,
            502,
            errorBody(
              provider.kind,
              502,
              "provider_unavailable",
              `provider ${provider.name}: ${(err as Error).message}`,
            ),
          );
          finish({ status: 502, error: "the request could not be sent" });
          return;
        }
        upstream = sent;
        sent.setTimeout(this.deps.timeoutMs, () =>
          sent.destroy(Object.assign(new Error("timeout"), { code: "GEODE_TIMEOUT" })),
        );
        sent.on("error", (err: NodeJS.ErrnoException) => {
          if (done) return;
          // A kept connection the provider closed as the call went out: nothing came back and
          // nothing reached the agent, so the call goes out once more on a fresh connection.
          if (
            retry &&
            !answered &&
            sent.reusedSocket &&
            !res.headersSent &&
            (err.code === "ECONNRESET" || err.code === "EPIPE")
          )
            return attempt(false);
          const timeout = err.code === "GEODE_TIMEOUT";
          if (!res.headersSent) {
            const status = timeout ? 504 : 502;
            const message = timeout
              ? `provider ${provider.name} did not answer within ${this.deps.timeoutMs} ms`
              : `provider ${provider.name} cannot be reached (${err.code ?? err.name})`;
            sendJson(
              res,
              status,
              errorBody(
                provider.kind,
                status,
                timeout ? "provider_timeout" : "provider_unavailable",
                message,
              ),
            );
            finish({ status, error: message });
          } else {
            // Mid-answer: cut the agent's stream too, so it sees the answer is incomplete.
            res.destroy();
            finish({
              status: 502,
              meter,
              error: timeout ? "the provider's stream stalled" : "the provider's stream was cut",
            });
          }
        });
        sent.on("response", (answer) => {
          answered = true;
          if (done) return void answer.destroy();
          const out: Record<string, string | string[]> = {};
          for (const [name, value] of Object.entries(answer.headers))
            if (value !== undefined && !DROPPED_RESPONSE_HEADERS.has(name)) out[name] = value;
          res.writeHead(answer.statusCode ?? 502, out);
          // SSE chunks go out as they come: no Nagle delay on the agent's socket.
          res.socket?.setNoDelay(true);
          res.flushHeaders();
          const m = ctx ? new UsageMeter(provider.kind, answer.headers["content-type"]) : undefined;
          meter = m;
          // The answer's Buffers go out as they come, read for usage on the way; a full agent
          // socket pauses the provider's (backpressure).
          const resume = () => answer.resume();
          answer.on("data", (chunk: Buffer) => {
            m?.push(chunk);
            if (!res.write(chunk)) {
              answer.pause();
              res.once("drain", resume);
            }
          });
          // A provider that stops mid-answer: the answer closes without ending.
          answer.on("error", () => undefined);
          answer.on("close", () => {
            if (!answer.complete && !done)
              sent.emit("error", Object.assign(new Error("aborted"), { code: "ECONNRESET" }));
          });
          answer.on("end", () => {
            if (done) return;
            m?.end();
            const status = answer.statusCode ?? 502;
            res.end();
            finish({
              status,
              ...(m ? { meter: m } : {}),
              ...(status >= 400 ? { error: `provider ${provider.name} answered ${status}` } : {}),
            });
          });
        });
        sent.end(raw);
      };
      attempt(true);
    });
  }

  /** Records an ended (or failed) model call and charges its budgets. */
  private ended(
    ctx: CallContext,
    outcome: { status: number; meter?: UsageMeter | undefined; error?: string | undefined },
  ): void {
    const usage = outcome.meter?.usage ?? { input_tokens: 0, cached_input_tokens: 0, output_tokens: 0 };
    const price = priceFor([...this.prices.values()], ctx.call.model);
    const cost = costOf(price, usage);
    const payload: LlmCallEndedPayload = {
      agent: ctx.payer.agent,
      provider: ctx.provider.name,
      model: ctx.call.model,
      ...usage,
      cost_usd: cost,
      duration_ms: Date.now() - ctx.started,
      status: outcome.status,
      stream: ctx.call.stream,
    };
    if (outcome.error === undefined) {
      if (outcome.meter && !outcome.meter.seen)
        this.deps.log.warn(
          { provider: ctx.provider.name, model: ctx.call.model, ...ctx.correlation },
          "the provider's answer carried no usage",
        );
      this.deps.plane.emit("llm_call_ended", { ...payload }, ctx.correlation);
    } else this.deps.plane.emit("llm_call_failed", { ...payload, error: outcome.error }, ctx.correlation);
    const tokens = usage.input_tokens + usage.output_tokens;
    if (tokens === 0 && cost === 0) return;
    const charge = this.budgets.charge(ctx.payer, { usd: cost, tokens }).then((crossed) => {
      for (const c of crossed)
        this.deps.plane.emit(
          "cost_warning",
          { agent: ctx.payer.agent, provider: ctx.provider.name, model: ctx.call.model, ...c },
          ctx.correlation,
        );
    });
    const pending = this.charging.get(ctx.payer.agent) ?? new Set<Promise<void>>();
    this.charging.set(ctx.payer.agent, pending);
    pending.add(charge);
    void charge.finally(() => {
      pending.delete(charge);
      if (pending.size === 0) this.charging.delete(ctx.payer.agent);
    });
  }

  /** Waits for this replica's charges of the agent's earlier calls, so its next check sees them. */
  private async charged(agent: string): Promise<void> {
    const pending = this.charging.get(agent);
    if (pending) await Promise.allSettled([...pending]);
  }

  /**
   * The call's correlation: the session the agent names, else the agent's one hook session open
   * now, else one per agent per idle gap.
   */
  private correlation(agent: string, named: string | string[] | undefined): Correlation {
    let sessionId: string;
    const tied = typeof named === "string" && SESSION_ID.test(named) ? named : this.hookSessions.tie(agent);
    if (tied !== null) sessionId = tied;
    else {
      const now = Date.now();
      let s = this.sessions.get(agent);
      if (!s || now - s.last > this.deps.sessionIdleMs) {
        s = { session_id: `llm-${agent}-${now.toString(36)}`, last: now };
        this.sessions.set(agent, s);
      }
      s.last = now;
      sessionId = s.session_id;
    }
    return { ...correlationOf({ session_id: sessionId }, 0), llm_call_id: randomUUID() };
  }
}

function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  if (res.headersSent) return void res.destroy();
  const data = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(data),
    ...headers,
  });
  res.end(data);
}
