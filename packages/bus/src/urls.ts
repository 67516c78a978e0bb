/**
 * A connection URL (or a comma-separated list) safe to print and log: passwords become `***`;
 * with `maskUser` a user without a password too (a NATS token travels as the user part).
 * Works on text that is not a valid URL as well.
 */
export function redactUrl(url: string, options: { maskUser?: boolean } = {}): string {
  const withPasswords = url.replace(/(\/\/[^/@:,\s]*):[^@,]*@/g, "$1:***@");
  return options.maskUser ? withPasswords.replace(/\/\/[^/@:,\s]+@/g, "//***@") : withPasswords;
}

/** `{value}` for a usable NATS_URL (servers as `nats://host[:port]` or `host[:port]`, comma-separated). */
export function checkNatsUrl(value: string, name: string): { value: string } | { error: string } {
  const bad = value
    .split(",")
    .map((s) => s.trim())
    .filter((s) => {
      if (s === "") return true;
      try {
        const u = new URL(s.includes("://") ? s : `nats://${s}`);
        return !["nats:", "tls:", "ws:", "wss:"].includes(u.protocol) || u.hostname === "";
      } catch {
        return true;
      }
    });
  if (bad.length === 0) return { value };
  return {
    error: `${name} must be nats://host:port (several comma-separated), got ${JSON.stringify(redactUrl(value, { maskUser: true }))}`,
  };
}
