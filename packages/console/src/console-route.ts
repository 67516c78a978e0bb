import type { IncomingMessage, ServerResponse } from "node:http";
import type { GeodeConnection, Logger, RuntimeEventBus } from "@geode/bus";
import type { VerifyClient } from "@geode/runtime";
import type {
  AttemptStore,
  HandlerRegistrations,
  PolicyStore,
  ReceiptStore,
  RunStore,
  SessionStore,
  WebhookStore,
} from "@geode/state";
import type { Caller } from "./console-auth.js";
import type { PendingApprovals } from "./pending-approvals.js";
import type { ConsoleProjection } from "./session-list.js";

/** What the API reads and acts through: the same stores and clients the CLI and services use. */
export interface ConsoleDeps {
  conn: GeodeConnection;
  events: RuntimeEventBus;
  approvals: PendingApprovals;
  receipts: ReceiptStore;
  attempts: AttemptStore;
  runs: RunStore;
  sessions: SessionStore;
  handlers: HandlerRegistrations;
  webhooks: WebhookStore;
  verify: VerifyClient;
  /** The policy sets (KV `{ns}_policies`), opened on first use so a missing KV never stops the console. */
  policies: () => Promise<PolicyStore>;
  /** The Postgres projection the session views read; null when the console runs without one (503). */
  projection: ConsoleProjection | null;
  /** Why there is no projection and how to get one (the 503's message when `projection` is null). */
  noProjection: string;
  log: Logger;
  /** Live timelines at once; more are refused with 503. */
  maxStreams: number;
}

export interface ApiRequest {
  req: IncomingMessage;
  res: ServerResponse;
  url: URL;
  caller: Caller;
  params: string[];
}

/** One route of the API: a method, a path pattern (its groups are `params`) and its handler. */
export type Route = {
  method: "GET" | "POST" | "DELETE";
  pattern: RegExp;
  handle: (deps: ConsoleDeps, r: ApiRequest) => Promise<void>;
};
