import { type ConnectOptions, connectGeode as connectBus, type GeodeConnection } from "@geode/bus";
import { tracePropagation } from "./trace-interceptors.js";

/**
 * `connectGeode` of `@geode/bus` with the trace context outermost on the connection
 * (`tracePropagation`), then `options.interceptors`: what a runtime or a handler process connects
 * with, so its requests start or continue traces.
 */
export async function connectGeode(
  options: ConnectOptions = {},
): Promise<GeodeConnection & { close(): Promise<void> }> {
  return await connectBus({
    ...options,
    interceptors: [...tracePropagation(), ...(options.interceptors ?? [])],
  });
}
