import { DEFAULT_NAMESPACE, NAMESPACE_PATTERN } from "@geode/contracts";
import { envSpec, envVar, read } from "@geode/env";
import { checkNatsUrl } from "./urls.js";

/** The replica counts `GEODE_STREAM_REPLICAS` accepts (a JetStream stream is R1, R3 or R5). */
export const STREAM_REPLICA_COUNTS = [1, 3, 5] as const;

/**
 * The bus's own variables: where NATS is, who this component is there, the namespace of its
 * subjects, streams and buckets, and the replicas of what it creates. `COMMON_ENV` of
 * `@geode/service` reads them with the rest of a component's environment.
 */
export const NATS_VARS = {
  natsUrl: envVar("NATS_URL", read.custom("nats://127.0.0.1:4222", checkNatsUrl), {
    default: "`nats://127.0.0.1:4222`",
    meaning: "NATS servers, comma-separated (list every cluster node)",
  }),
  natsUser: envVar("NATS_USER", read.optional(), {
    default: "unset",
    meaning: "this component's NATS user (set `NATS_PASS` with it)",
  }),
  natsPass: envVar("NATS_PASS", read.optional(), { default: "unset", meaning: "the NATS user's password" }),
  natsToken: envVar("NATS_TOKEN", read.optional(), {
    default: "unset",
    meaning: "token authentication instead of a user",
  }),
  namespace: envVar(
    "GEODE_NAMESPACE",
    read.custom<string>(DEFAULT_NAMESPACE, (v, name) =>
      NAMESPACE_PATTERN.test(v)
        ? { value: v }
        : { error: `${name} must match [a-z][a-z0-9_]{0,31}, got ${JSON.stringify(v)}` },
    ),
    {
      default: "`geode`",
      meaning: "prefix of every subject, stream, bucket and the Postgres schema, `[a-z][a-z0-9_]{0,31}`",
    },
  ),
  streamReplicas: envVar(
    "GEODE_STREAM_REPLICAS",
    read.custom<number>(1, (v, name) =>
      STREAM_REPLICA_COUNTS.includes(Number(v) as 1 | 3 | 5) && /^[0-9]+$/.test(v)
        ? { value: Number(v) }
        : { error: `${name} must be 1, 3 or 5, got ${JSON.stringify(v)}` },
    ),
    {
      default: "`1`",
      meaning:
        "replicas of every stream, KV bucket and durable consumer a component creates: 1, 3 or 5 (3 on a three-node cluster)",
    },
  ),
};

/** What is wrong across the NATS credentials (a user needs its password, and the other way round). */
export function natsCredentialsProblem(c: {
  natsUser: string | undefined;
  natsPass: string | undefined;
}): string | undefined {
  return (c.natsUser === undefined) !== (c.natsPass === undefined)
    ? "NATS_USER and NATS_PASS must be set together"
    : undefined;
}

/** The bus's environment (`NATS_VARS`), read and checked at once. */
export const NATS_ENV = envSpec(NATS_VARS, natsCredentialsProblem);

/** The NATS settings, validated. */
export type NatsConfig = ReturnType<typeof NATS_ENV.parse>;
