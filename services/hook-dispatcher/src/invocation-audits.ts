import type { RuntimeEventBus } from "@geode/bus";
import type { Correlation, ExtensionInvokedPayload } from "@geode/contracts";

/**
 * The `extension_invoked` events of one invocation. Each is held only until the invocation's next
 * message goes out (the next handler request, or the reply) and is then published right ahead of
 * it, in the same socket write: the stream has every handler's audit before anyone can see the
 * step that follows, and the hot path pays no extra write or ack wait.
 */
export class InvocationAudits {
  private held: ExtensionInvokedPayload[] = [];

  constructor(
    private readonly events: RuntimeEventBus,
    private readonly correlation: Correlation,
  ) {}

  add(event: ExtensionInvokedPayload): void {
    this.held.push(event);
  }

  /** Publishes what is held (never waits for the stream's ack; the bus retries and logs). */
  publish(): void {
    if (this.held.length === 0) return;
    const out = this.held;
    this.held = [];
    for (const event of out) void this.events.emit("extension_invoked", event, this.correlation);
  }
}
