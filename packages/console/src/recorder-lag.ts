import {
  type ConsoleRecorderLag,
  type Names,
  RECORDER_CONSUMER,
  recorderLagMessages,
} from "@geode/contracts";
import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";

/** The activity-recorder's position on one stream (`GET /api/recorder`). */
export type RecorderLag = ConsoleRecorderLag;

/**
 * The recorder's lag on `{NS}_EVENTS` and `{NS}_TIMELINE`: `recorderLagMessages`, the formula of
 * the metric `geode_recorder_lag_messages`, over its durable consumers' state.
 */
export async function recorderLag(nc: NatsConnection, names: Names): Promise<RecorderLag[]> {
  const jsm = await jetstreamManager(nc, { checkAPI: false });
  return Promise.all(
    [names.eventsStream, names.timelineStream].map(async (stream): Promise<RecorderLag> => {
      const base = { stream, consumer: RECORDER_CONSUMER };
      const state = await jsm.streams
        .info(stream)
        .then((si) => si.state)
        .catch(() => null);
      const last = state?.last_seq ?? null;
      try {
        const ci = await jsm.consumers.info(stream, RECORDER_CONSUMER);
        return {
          ...base,
          present: true,
          lag: state ? recorderLagMessages(state, ci.ack_floor.stream_seq) : null,
          pending: ci.num_pending,
          ack_pending: ci.num_ack_pending,
          stream_last_seq: last,
          delivered_seq: ci.delivered.stream_seq,
        };
      } catch {
        return {
          ...base,
          present: false,
          lag: null,
          pending: null,
          ack_pending: null,
          stream_last_seq: last,
          delivered_seq: null,
        };
      }
    }),
  );
}
