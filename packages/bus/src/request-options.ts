import type { MsgHdrs } from "@nats-io/transport-node";

export interface RequestMsgOptions {
  /** Milliseconds to wait for the reply (`Infinity`: as long as a timer can wait, about 24 days). */
  timeoutMs: number;
  /** Cancels the wait; the promise rejects with the signal's reason. */
  signal?: AbortSignal | undefined;
  headers?: MsgHdrs;
}
