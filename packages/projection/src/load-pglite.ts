import type { PGlite } from "@electric-sql/pglite";
import { ProjectionUnavailableError } from "./errors.js";

/**
 * PGlite, loaded when the embedded database is opened and not before: it is an optional
 * dependency, left out of installs that always talk to PostgreSQL (the container image).
 */
export async function loadPglite(): Promise<typeof PGlite> {
  try {
    return (await import("@electric-sql/pglite")).PGlite;
  } catch (err) {
    if ((err as { code?: unknown }).code !== "ERR_MODULE_NOT_FOUND") throw err;
    throw new ProjectionUnavailableError(
      "the embedded database needs @electric-sql/pglite, which this installation leaves out",
      { cause: err, hint: "set DATABASE_URL to a PostgreSQL database" },
    );
  }
}
