import { envSpec, envVar, read } from "@geode/bus";

/** The console's own environment (with COMMON_ENV; docs/operations.md, "Configuration"). */
export const CONSOLE_ENV = envSpec({
  token: envVar("GEODE_CONSOLE_TOKEN", read.optional(), {
    default: "unset: `geode console` refuses to start",
    meaning:
      "the operator console's token: a bearer token for `/api/`, or entered once on the page (never in URLs or logs)",
  }),
});
