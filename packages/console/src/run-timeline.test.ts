import { describe, expect, it } from "vitest";
import { type TimelineItem, timelineOrder } from "./run-timeline.js";

const item = (stream: TimelineItem["stream"], seq: number, ts: number): TimelineItem => ({
  stream,
  seq,
  id: `${stream}-${seq}`,
  name: stream === "events" ? "turn_completed" : "session.started",
  ts,
  source: "test",
  correlation: { run_id: "r" } as TimelineItem["correlation"],
  payload: {},
});

describe("the order of a run's timeline", () => {
  it("sorts by time, then by sequence within a stream", () => {
    const items = [
      item("events", 2, 20),
      item("timeline", 1, 10),
      item("events", 1, 20),
      item("events", 3, 5),
    ];
    expect(items.sort(timelineOrder).map((i) => i.id)).toEqual([
      "events-3",
      "timeline-1",
      "events-1",
      "events-2",
    ]);
  });

  it("puts an event before a timeline record of the same millisecond, whatever their sequences", () => {
    // The timeline stream's sequence 1 is lower than the event's 3: sequences of two streams say nothing.
    const items = [item("timeline", 1, 100), item("events", 3, 100), item("events", 2, 100)];
    expect(items.sort(timelineOrder).map((i) => i.id)).toEqual(["events-2", "events-3", "timeline-1"]);
  });
});
