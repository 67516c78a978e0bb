import { ErrorCode, GeodeError } from "@geode/contracts";
import { redactUrl } from "./urls.js";

/**
 * NATS could not be reached (or refused us) when connecting. The message is one line naming the
 * servers without their passwords and what failed; `hint` is one more line: what to do.
 */
export class NatsUnavailableError extends GeodeError {
  override readonly name = "NatsUnavailableError";
  /** What to do about it, one line. */
  readonly hint: string;

  constructor(natsUrl: string, cause: unknown) {
    const { what, hint } = describeNatsFailure(cause);
    super(
      ErrorCode.Unavailable,
      `cannot connect to NATS at ${redactUrl(natsUrl, { maskUser: true })}: ${what}`,
      {
        cause,
        details: { nats_url: redactUrl(natsUrl, { maskUser: true }) },
      },
    );
    this.hint = hint;
  }
}

const START_ONE =
  "Start a nats-server with JetStream there (`geode up` starts one for a loopback URL), or set NATS_URL to one that runs.";

function describeNatsFailure(err: unknown): { what: string; hint: string } {
  const e = err as { message?: unknown; code?: unknown; name?: unknown } | undefined;
  const message = typeof e?.message === "string" && e.message !== "" ? e.message.split("\n")[0] : String(err);
  const code = typeof e?.code === "string" ? e.code : "";
  if (code === "ERR_INVALID_URL" || /invalid url/i.test(message ?? ""))
    return {
      what: "not a valid address",
      hint: "NATS_URL must be nats://host:port, several comma-separated.",
    };
  if (/authoriz|authentic|permissions/i.test(message ?? ""))
    return { what: message ?? "refused", hint: "Check NATS_USER/NATS_PASS or NATS_TOKEN for this server." };
  if (code === "ENOTFOUND" || code === "EAI_AGAIN")
    return { what: `unknown host (${message})`, hint: "Check the host name in NATS_URL." };
  if (/timeout|timed out/i.test(message ?? "") || e?.name === "TimeoutError")
    return { what: "no answer in time", hint: START_ONE };
  return { what: message ?? "failed", hint: START_ONE };
}
