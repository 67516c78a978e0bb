import type { Logger } from "@geode/bus";
import { pino } from "pino";

/** Paths never written to logs, whatever a caller passes. */
export const LOG_REDACT_PATHS = [
  "password",
  "*.password",
  "token",
  "*.token",
  "authorization",
  "*.authorization",
  "*.headers",
  "payload",
  "*.payload",
  "arguments",
  "*.arguments",
  "user_input",
  "*.user_input",
  "candidate.text",
  "instruction",
  "*.instruction",
];

/** Structured JSON logs (pino); correlation ids go in as fields, never payload content. */
export function createLogger(service: string, level = process.env["LOG_LEVEL"] ?? "info"): Logger {
  return pino({
    level,
    base: { service },
    redact: { paths: LOG_REDACT_PATHS, censor: "[REDACTED]" },
    timestamp: pino.stdTimeFunctions.isoTime,
  });
}
