import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { ConsoleMe } from "@geode/contracts";

/** Name of the console's session cookie (HttpOnly, SameSite=Strict; holds a random id, never the token). */
export const SESSION_COOKIE = "geode_console";

const SESSION_TTL_MS = 12 * 60 * 60 * 1000;
const MAX_SESSIONS = 256;

const digest = (text: string) => createHash("sha256").update(text, "utf8").digest();

/** Who made a request: a bearer-token client (no name yet) or a signed-in page (its operator). */
export type Caller = ConsoleMe;

/**
 * The console's one secret, `GEODE_CONSOLE_TOKEN`. Scripts send it as `Authorization: Bearer`;
 * the page sends it once to `POST /api/login` and then holds only a random session id in an
 * HttpOnly, SameSite=Strict cookie. Tokens are compared as SHA-256 digests in constant time, and
 * the token never appears in a URL, a reply or a log.
 */
export class ConsoleAuth {
  private readonly tokenDigest: Buffer;
  private readonly sessions = new Map<string, { operator: string; expires: number }>();

  constructor(token: string) {
    if (token.length === 0) throw new Error("GEODE_CONSOLE_TOKEN is empty");
    this.tokenDigest = digest(token);
  }

  /** Constant-time check of a presented token. */
  matches(candidate: string): boolean {
    return timingSafeEqual(digest(candidate), this.tokenDigest);
  }

  /** Opens a page session for `operator`; returns its cookie value. */
  openSession(operator: string): string {
    this.expire();
    while (this.sessions.size >= MAX_SESSIONS) {
      const oldest = this.sessions.keys().next().value;
      if (oldest === undefined) break;
      this.sessions.delete(oldest);
    }
    const id = randomBytes(32).toString("base64url");
    this.sessions.set(id, { operator, expires: Date.now() + SESSION_TTL_MS });
    return id;
  }

  closeSession(req: IncomingMessage): void {
    const id = cookieOf(req, SESSION_COOKIE);
    if (id !== undefined) this.sessions.delete(id);
  }

  /** The caller of a request, or null when it carries neither the token nor a live session. */
  caller(req: IncomingMessage): Caller | null {
    const auth = req.headers.authorization;
    if (auth !== undefined) {
      const m = /^Bearer\s+(.+)$/i.exec(auth);
      return m?.[1] !== undefined && this.matches(m[1].trim()) ? { operator: null, via: "bearer" } : null;
    }
    const id = cookieOf(req, SESSION_COOKIE);
    if (id === undefined) return null;
    const session = this.sessions.get(id);
    if (!session || session.expires < Date.now()) {
      this.sessions.delete(id);
      return null;
    }
    return { operator: session.operator, via: "cookie" };
  }

  /** `Set-Cookie` value for a session id (or for clearing it with `null`). */
  static cookie(id: string | null): string {
    const base = `${SESSION_COOKIE}=${id ?? ""}; HttpOnly; SameSite=Strict; Path=/`;
    return id === null ? `${base}; Max-Age=0` : `${base}; Max-Age=${SESSION_TTL_MS / 1000}`;
  }

  private expire(): void {
    const now = Date.now();
    for (const [id, s] of this.sessions) if (s.expires < now) this.sessions.delete(id);
  }
}

function cookieOf(req: IncomingMessage, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? "").split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}
