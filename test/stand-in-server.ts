/** The loopback HTTP server under each scripted stand-in of a model API. */
import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** A request as a stand-in received it: its URL, its body parsed (`{}` when not JSON), and raw. */
export interface StandInRequest {
  url: string;
  body: Record<string, unknown>;
  raw: string;
  /** The request's headers (a gateway in front must have swapped the agent's token for its key). */
  headers?: IncomingHttpHeaders;
}

/**
 * Runs before a request is answered; the answer waits for it (a test changes the plane between two
 * model turns of one agent session). A gate that throws leaves the request answered anyway (the test keeps its own errors).
 */
export type StandInGate = (request: StandInRequest) => Promise<void> | void;

/**
 * Serves `answer` on 127.0.0.1 (a free port) once each request's body is read (and `gate`, when
 * given, has let it through); `close` drops the open connections too (agents keep theirs alive).
 */
export async function startStandInServer(
  answer: (request: StandInRequest, res: ServerResponse) => void,
  gate?: StandInGate,
): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    let raw = "";
    req.setEncoding("utf8");
    req.on("data", (c: string) => (raw += c));
    req.on("end", () => {
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(raw) as Record<string, unknown>;
      } catch {
        // not JSON: answered like any other request
      }
      const request = { url: req.url ?? "/", body, raw, headers: req.headers };
      if (!gate) return answer(request, res);
      void Promise.resolve()
        .then(() => gate(request))
        .catch(() => undefined)
        .then(() => answer(request, res));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
