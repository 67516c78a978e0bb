import type { NatsConnection } from "@nats-io/transport-node";

/**
 * Calls `onChange(false, server)` when `nc` loses its server and `onChange(true, server)` when it
 * is connected again (the client reconnects by itself); stops when the connection closes.
 */
export function followConnection(nc: NatsConnection, onChange: (up: boolean, server: string) => void): void {
  void (async () => {
    for await (const s of nc.status()) {
      if (s.type === "disconnect") onChange(false, s.server);
      else if (s.type === "reconnect") onChange(true, s.server);
    }
  })().catch(() => undefined);
}
