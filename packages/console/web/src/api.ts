/** The console's JSON API, same origin; the session cookie carries the sign-in. */
export type { ConsolePage as Page } from "@geode/contracts";

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** Calls the API: GET without a body, POST with one (or `method`); JSON both ways. */
export async function api<T>(path: string, body?: unknown, method?: "DELETE"): Promise<T> {
  const res = await fetch(path, {
    method: method ?? (body === undefined ? "GET" : "POST"),
    credentials: "same-origin",
    headers: body === undefined ? {} : { "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const data = (await res.json().catch(() => ({}))) as { error?: { code: string; message: string } };
  if (!res.ok)
    throw new ApiError(res.status, data.error?.code ?? "internal", data.error?.message ?? res.statusText);
  return data as T;
}
