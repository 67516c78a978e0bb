import { type Logger, pino } from "pino";

/** What the bus's responders and publishers log to (pino; `@geode/service`'s `createLogger`). */
export type { Logger };

/** A logger that writes nothing (tests and library defaults). */
export function silentLogger(): Logger {
  return pino({ level: "silent" });
}
