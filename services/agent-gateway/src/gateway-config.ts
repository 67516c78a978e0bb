import { z } from "zod";

/** The agent gateway's own settings, beyond DESIGN §10's (validated at start-up). */
export interface GatewayConfig {
  /** Listen address (`GEODE_GATEWAY_ADDR`, default `127.0.0.1:4280`; port 0 picks a free one). */
  host: string;
  port: number;
  /** Largest request body accepted (`GEODE_GATEWAY_MAX_BODY_BYTES`, default 1 MiB); larger is 413. */
  maxBodyBytes: number;
  /** Budget of one hook invocation through the hook-dispatcher. */
  hookTimeoutMs: number;
  /** Budget of one verification (three hook chains run inside it). */
  verifyTimeoutMs: number;
  /** Wait for a human approver (`GEODE_APPROVAL_TIMEOUT_MS`, default 60 s). */
  approvalTimeoutMs: number;
}

export const DEFAULT_GATEWAY_ADDR = "127.0.0.1:4280";
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

const ADDR = /^(?<host>\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):(?<port>\d{1,5})$/;

const EnvSchema = z.object({
  GEODE_GATEWAY_ADDR: z
    .string()
    .optional()
    .transform((v, ctx) => {
      const raw = v === undefined || v.trim() === "" ? DEFAULT_GATEWAY_ADDR : v.trim();
      const m = ADDR.exec(raw);
      const port = Number(m?.groups?.["port"]);
      if (!m || port > 65_535) {
        ctx.addIssue({ code: "custom", message: `must be host:port, got ${JSON.stringify(raw)}` });
        return z.NEVER;
      }
      return { host: (m.groups?.["host"] ?? "").replace(/^\[|\]$/g, ""), port };
    }),
  GEODE_GATEWAY_MAX_BODY_BYTES: z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v.trim() === "") return DEFAULT_MAX_BODY_BYTES;
      const n = Number(v);
      if (!Number.isInteger(n) || n < 1024) {
        ctx.addIssue({ code: "custom", message: `must be an integer ≥ 1024, got ${JSON.stringify(v)}` });
        return z.NEVER;
      }
      return n;
    }),
});

export class GatewayConfigError extends Error {
  override readonly name = "GatewayConfigError";
}

/** Reads the gateway's settings from the environment; a bad value throws naming the variable. */
export function gatewayConfig(
  env: NodeJS.ProcessEnv = process.env,
  service: { approvalTimeoutMs: number } = { approvalTimeoutMs: 60_000 },
): GatewayConfig {
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`);
    throw new GatewayConfigError(`invalid configuration: ${lines.join("; ")}`);
  }
  return {
    host: parsed.data.GEODE_GATEWAY_ADDR.host,
    port: parsed.data.GEODE_GATEWAY_ADDR.port,
    maxBodyBytes: parsed.data.GEODE_GATEWAY_MAX_BODY_BYTES,
    hookTimeoutMs: 30_000,
    verifyTimeoutMs: 90_000,
    approvalTimeoutMs: service.approvalTimeoutMs,
  };
}
