import {
  type ConnectOptions,
  connectGeode as connectBus,
  type GeodeConnection,
  useInterceptors,
} from "@geode/bus";
import { tracePropagation } from "./trace-interceptors.js";

/**
 * `connectGeode` of `@geode/bus` with the trace context on the connection (`tracePropagation`):
 * what a runtime or a handler process connects with, so its requests start or continue traces.
 */
export async function connectGeode(
  options: ConnectOptions = {},
): Promise<GeodeConnection & { close(): Promise<void> }> {
  const conn = await connectBus(options);
  useInterceptors(conn.nc, tracePropagation());
  return conn;
}
