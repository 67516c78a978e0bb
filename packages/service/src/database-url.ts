import { redactUrl } from "@geode/bus";

/** `{value}` for a usable DATABASE_URL: `postgres://` or `postgresql://` with a host. */
export function checkDatabaseUrl(value: string, name: string): { value: string } | { error: string } {
  try {
    const u = new URL(value);
    if (
      (u.protocol === "postgres:" || u.protocol === "postgresql:") &&
      (u.hostname !== "" || u.search.includes("host="))
    )
      return { value };
  } catch {
    // said below
  }
  return {
    error: `${name} must be postgres://user:password@host:port/database (unset: the embedded database), got ${JSON.stringify(redactUrl(value))}`,
  };
}
