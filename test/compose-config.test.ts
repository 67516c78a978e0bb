import { execFileSync } from "node:child_process";
import { accessSync, constants, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { findNatsServerBinary } from "@geode/cli";
import { SERVICE_NAMES } from "@geode/contracts";
import { REPO_ROOT } from "@geode/testing";
import Ajv2019 from "ajv/dist/2019.js";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { composeClusterNodes } from "../infra/cluster/cluster.js";
import { DEFAULT_HANDLERS, natsUsers, passwordEnv } from "../infra/nats/nats-roles.js";

const CLUSTER_NODES = ["nats-1", "nats-2", "nats-3"];

const read = (p: string) => readFileSync(path.join(REPO_ROOT, p), "utf8");

type Json = string | number | boolean | null | Json[] | { [k: string]: Json };
type Service = {
  image?: string;
  command?: string[];
  environment?: Record<string, string>;
  volumes?: string[];
  healthcheck?: { test: string[] };
  depends_on?: Record<string, { condition: string }>;
  profiles?: string[];
  user?: string;
};

/** `${VAR:-default}` / `${VAR}` interpolation as compose does it, against an empty environment. */
function interpolate(v: Json): Json {
  if (typeof v === "string")
    return v.replace(/\$\{([A-Z0-9_]+)(?::?-([^}]*))?\}/g, (_m, _name: string, def?: string) => def ?? "");
  if (Array.isArray(v)) return v.map(interpolate);
  if (v && typeof v === "object")
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, interpolate(x)]));
  return v;
}

/** The compose model: YAML anchors and merge keys resolved, variables interpolated with defaults. */
const model = interpolate(parse(read("docker-compose.yml"), { merge: true }) as Json) as {
  services: Record<string, Service>;
  volumes: Record<string, unknown>;
};
const services = model.services;

/** Drops string-valued `id` annotations (a property named `id` has an object value and stays). */
function stripIds(v: Json): Json {
  if (Array.isArray(v)) return v.map(stripIds);
  if (v && typeof v === "object")
    return Object.fromEntries(
      Object.entries(v)
        .filter(([k, x]) => !(k === "id" && typeof x === "string"))
        .map(([k, x]) => [k, stripIds(x)]),
    );
  return v;
}

function dockerCompose(): string | undefined {
  for (const p of ["/usr/bin/docker-compose", "/usr/local/bin/docker-compose"]) {
    try {
      accessSync(p, constants.X_OK);
      return p;
    } catch {
      // not here
    }
  }
  return undefined;
}

describe("docker-compose.yml", () => {
  it("is valid against the Compose Specification schema", () => {
    const ajv = new Ajv2019({ strict: false, validateFormats: false, allErrors: true });
    // The vendored schema (docker-compose 1.29's compose_spec.json) still carries draft-04 `id`
    // annotations and an `http://…#` draft URI that ajv refuses; neither constrains anything.
    const { $schema: _draft, ...schema } = stripIds(JSON.parse(read("infra/compose/compose-spec.json"))) as {
      [k: string]: Json;
    };
    const validate = ajv.compile(schema as object);
    const ok = validate(model);
    expect(validate.errors ?? [], JSON.stringify(validate.errors, null, 2)).toEqual([]);
    expect(ok).toBe(true);
    // …and the check has teeth: a misspelled key or a wrong type is refused.
    expect(validate({ services: { x: { image: "a", healthcheck: { tset: ["CMD", "true"] } } } })).toBe(false);
    expect(validate({ services: { x: { image: "a", depends_on: 3 } } })).toBe(false);
  });

  it.skipIf(!dockerCompose())("passes `docker-compose config`", () => {
    const out = execFileSync(dockerCompose() as string, ["-f", "docker-compose.yml", "config"], {
      cwd: REPO_ROOT,
      encoding: "utf8",
      env: { PATH: process.env["PATH"] ?? "" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const resolved = parse(out) as { services: Record<string, Service> };
    expect(Object.keys(resolved.services).sort()).toEqual(Object.keys(services).sort());
    // Our own interpolation agrees with compose's, so the structural checks below hold for it too.
    for (const [name, s] of Object.entries(resolved.services))
      expect(s.environment ?? {}, name).toEqual(
        Object.fromEntries(Object.entries(services[name]?.environment ?? {}).map(([k, v]) => [k, String(v)])),
      );
  });

  it("runs NATS with JetStream and the per-role configuration, with every password variable set", () => {
    const nats = services["nats"] as Service;
    expect(nats.command).toEqual(expect.arrayContaining(["-js", "-c", "/etc/nats/geode.conf"]));
    expect(nats.volumes).toContain("./infra/nats/geode.conf:/etc/nats/geode.conf:ro");
    expect(nats.healthcheck?.test.join(" ")).toMatch(/healthz/);
    const vars = [...read("infra/nats/geode.conf").matchAll(/password: \$([A-Z0-9_]+)/g)].map((m) => m[1]);
    expect(vars.length).toBeGreaterThan(0);
    for (const v of vars) expect(nats.environment?.[v as string], v).toMatch(/^[A-Za-z][A-Za-z0-9_-]*$/);
  });

  it("runs every service from one image, each health-checked with `geode health` and its own NATS user", () => {
    const users = natsUsers({ handlers: [...DEFAULT_HANDLERS] });
    const nats = services["nats"] as Service;
    const images = new Set<string | undefined>();
    for (const name of SERVICE_NAMES) {
      const s = services[name];
      expect(s, name).toBeDefined();
      images.add(s?.image);
      expect(s?.healthcheck?.test).toEqual([
        "CMD",
        "/app/infra/docker/entrypoint.sh",
        "geode",
        "health",
        name,
      ]);
      expect(s?.depends_on?.["nats"]).toEqual({ condition: "service_healthy" });
      const env = s?.environment ?? {};
      expect(env["GEODE_SERVICE"]).toBe(name);
      const user = users.find((u) => u.user === env["NATS_USER"]);
      expect(user?.role, `${name} connects as its own role`).toBe(name);
      expect(env["NATS_PASS"], `${name}'s password is the one nats-server expects`).toBe(
        nats.environment?.[user?.passwordEnv as string],
      );
      expect(env["NATS_URL"]).toBe("nats://nats:4222");
    }
    expect(images.size).toBe(1);
    expect(services["activity-recorder"]?.depends_on?.["postgres"]).toEqual({ condition: "service_healthy" });
    expect(services["activity-recorder"]?.environment?.["DATABASE_URL"]).toMatch(
      /^postgres:\/\/.*@postgres:5432\//,
    );
  });

  it("has a demo profile that runs `geode demo` once the services are healthy", () => {
    const demo = services["demo"] as Service;
    expect(demo.profiles).toEqual(["demo"]);
    expect(demo.command).toEqual(["geode", "demo"]);
    for (const name of SERVICE_NAMES)
      expect(demo.depends_on?.[name]).toEqual({ condition: "service_healthy" });
    // Only the demo and the cluster nodes are in a profile: a plain `docker compose up` starts NATS,
    // Postgres and the services.
    for (const [name, s] of Object.entries(services))
      if (name !== "demo" && !CLUSTER_NODES.includes(name)) expect(s.profiles, name).toBeUndefined();
  });

  it("has a cluster profile of three JetStream nodes, each with the per-role users and its own store", () => {
    const stores = new Set<string>();
    for (const node of CLUSTER_NODES) {
      const s = services[node] as Service;
      expect(s.profiles, node).toEqual(["cluster"]);
      expect(s.command).toEqual(["-c", `/etc/nats/${node}.conf`]);
      expect(s.volumes).toEqual(
        expect.arrayContaining([
          "./infra/nats/geode.conf:/etc/nats/geode.conf:ro",
          `./infra/cluster/${node}.conf:/etc/nats/${node}.conf:ro`,
        ]),
      );
      const store = s.volumes?.find((v) => v.endsWith(":/data"));
      expect(store, node).toBeDefined();
      stores.add(store as string);
      expect(s.environment).toEqual(services["nats"]?.environment);
      expect(s.healthcheck?.test.join(" ")).toMatch(/healthz/);
      // The node's configuration is the committed, generated one, and routes to all three.
      const conf = read(`infra/cluster/${node}.conf`);
      expect(conf).toBe(composeClusterNodes()[`${node}.conf`]);
      expect(conf).toMatch(new RegExp(`server_name: ${node}\\n`));
      for (const peer of CLUSTER_NODES) expect(conf).toContain(`nats-route://${peer}:6222`);
    }
    expect(stores.size).toBe(3);
    // The services follow GEODE_NATS_URL and GEODE_STREAM_REPLICAS (defaults: the one NATS, R1).
    for (const name of SERVICE_NAMES) {
      const raw = (
        parse(read("docker-compose.yml"), { merge: true }) as { services: Record<string, Service> }
      ).services[name];
      expect(raw?.environment?.["NATS_URL"]).toMatch(/^\$\{GEODE_NATS_URL:-nats:\/\/nats:4222\}$/);
      expect(raw?.environment?.["GEODE_STREAM_REPLICAS"]).toMatch(/^\$\{GEODE_STREAM_REPLICAS:-1\}$/);
    }
  });

  it("runs nats-server on each node's configuration (syntax check)", () => {
    const binary = findNatsServerBinary();
    expect(binary, "nats-server binary").toBeDefined();
    const dir = mkdtempSync(path.join(tmpdir(), "geode-cluster-conf-"));
    try {
      writeFileSync(path.join(dir, "geode.conf"), read("infra/nats/geode.conf"));
      const users = natsUsers({ handlers: [...DEFAULT_HANDLERS] });
      const env = { PATH: process.env["PATH"] ?? "", ...passwordEnv(users, () => "secret-pass") };
      for (const node of CLUSTER_NODES) {
        writeFileSync(path.join(dir, `${node}.conf`), read(`infra/cluster/${node}.conf`));
        execFileSync(binary as string, ["-c", path.join(dir, `${node}.conf`), "-t"], { env, stdio: "pipe" });
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("Dockerfile", () => {
  const text = read("Dockerfile");
  const stages = text.split(/^FROM /m).slice(1);

  it("builds in one stage with the frozen lockfile and runs in a small non-root stage", () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    expect(text).toMatch(/pnpm install[^\n]*--frozen-lockfile/);
    const runtime = stages.at(-1) as string;
    expect(runtime).toMatch(/^node:\$\{NODE_VERSION\}-(slim|alpine)/);
    const users = [...runtime.matchAll(/^USER (\S+)/gm)].map((m) => m[1]);
    expect(users.at(-1)).toBe("node");
    expect(runtime).not.toMatch(/pnpm install|npm install/);
    expect(runtime).toMatch(/ENTRYPOINT \["\/app\/infra\/docker\/entrypoint\.sh"\]/);
  });

  it("has an entry point that runs the chosen service or the CLI as compiled JavaScript, no tsx", () => {
    const entry = read("infra/docker/entrypoint.sh");
    accessSync(path.join(REPO_ROOT, "infra/docker/entrypoint.sh"), constants.X_OK);
    expect(entry).toMatch(/exec node "\/app\/services\/\$svc\/dist\/main\.js"/);
    expect(entry).toMatch(/exec node \/app\/packages\/cli\/bin\/geode\.mjs "\$@"/);
    expect(entry).not.toMatch(/tsx|--import/);
    expect(read("Dockerfile")).toMatch(/pnpm build/);
    execFileSync("sh", ["-n", path.join(REPO_ROOT, "infra/docker/entrypoint.sh")]);
  });

  it("keeps local state, dependencies and the git history out of the build context", () => {
    const ignored = read(".dockerignore")
      .split("\n")
      .map((l) => l.trim());
    for (const p of [".git", "**/node_modules", ".geode", ".env"]) expect(ignored).toContain(p);
  });
});
