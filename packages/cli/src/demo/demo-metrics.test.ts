import { describe, expect, it } from "vitest";
import { demoMetricsPort } from "./run-demo.js";

describe("the demo's metrics ports", () => {
  it("are off when GEODE_METRICS_PORT is unset or empty: a running geode up holds the default ones", () => {
    expect([0, 1, 2, 3].map((i) => demoMetricsPort({}, i))).toEqual(["0", "0", "0", "0"]);
    expect(demoMetricsPort({ GEODE_METRICS_PORT: " " }, 2)).toBe("0");
  });

  it("are consecutive from GEODE_METRICS_PORT when it is set, one per service, as under geode up", () => {
    const ports = [0, 1, 2, 3].map((i) => demoMetricsPort({ GEODE_METRICS_PORT: "19464" }, i));
    expect(ports).toEqual(["19464", "19465", "19466", "19467"]);
    expect(demoMetricsPort({ GEODE_METRICS_PORT: "0" }, 3)).toBe("0");
  });

  it("pass a value that is not a port on as it is, for the services to refuse with their own message", () => {
    expect(demoMetricsPort({ GEODE_METRICS_PORT: "lots" }, 1)).toBe("lots");
  });
});
