import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { findNatsServerBinary } from "@geode/local-server";
import { REPO_ROOT } from "@geode/testing";
import { describe, expect, it } from "vitest";
import {
  DEFAULT_HANDLERS,
  DEFAULT_TOOL_PROVIDERS,
  natsUsers,
  renderNatsConfig,
} from "../infra/nats/nats-roles.js";

const committed = path.join(REPO_ROOT, "infra/nats/geode.conf");

describe("infra/nats/geode.conf", () => {
  it("is the generator's output for the default namespace (regenerate it after changing roles)", () => {
    const expected = renderNatsConfig({
      handlers: [...DEFAULT_HANDLERS],
      toolProviders: [...DEFAULT_TOOL_PROVIDERS],
    });
    expect(readFileSync(committed, "utf8")).toBe(expected);
  });

  it("holds no password, only environment references, and nats-server accepts it", () => {
    const text = readFileSync(committed, "utf8");
    const users = natsUsers({ handlers: [...DEFAULT_HANDLERS] });
    const passwordLines = text.split("\n").filter((l) => l.trim().startsWith("password:"));
    expect(passwordLines).toHaveLength(users.length);
    for (const line of passwordLines) expect(line.trim()).toMatch(/^password: \$GEODE_NATS_PASS_[A-Z0-9_]+$/);

    const binary = findNatsServerBinary();
    expect(binary, "nats-server binary").toBeDefined();
    const env = Object.fromEntries(users.map((u) => [u.passwordEnv, "dev-password"]));
    expect(() =>
      execFileSync(binary as string, ["-c", committed, "-t"], {
        env: { ...process.env, ...env },
        stdio: ["ignore", "pipe", "pipe"],
      }),
    ).not.toThrow();
  });

  it("refuses to start when a password variable is missing", () => {
    const binary = findNatsServerBinary() as string;
    expect(() =>
      execFileSync(binary, ["-c", committed, "-t"], {
        env: { PATH: process.env["PATH"] ?? "" },
        stdio: ["ignore", "pipe", "pipe"],
      }),
    ).toThrow(/GEODE_NATS_PASS_/);
  });

  it("refuses handler names that would widen a permission", () => {
    expect(() => natsUsers({ handlers: ["a.>"] })).toThrow(/handler name/);
    expect(() => natsUsers({ handlers: ["*"] })).toThrow(/handler name/);
    expect(() => natsUsers({ handlers: ["a-b", "a_b"] })).toThrow(/share GEODE_NATS_PASS_HANDLER_A_B/);
  });
});
