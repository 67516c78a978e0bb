import { execFileSync } from "node:child_process";
import { accessSync, constants, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { readAuditKeyFile } from "@geode/audit";
import { SERVICE_NAMES } from "@geode/contracts";
import { findNatsServerBinary } from "@geode/local-server";
import { REPO_ROOT } from "@geode/testing";
import Ajv2019 from "ajv/dist/2019.js";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { composeClusterNodes } from "../infra/cluster/cluster.js";
import { BASE_IMAGES } from "../infra/docker/local-bases.js";
import { DEFAULT_HANDLERS, natsUsers, passwordEnv } from "../infra/nats/nats-roles.js";

const CLUSTER_NODES = ["nats-1", "nats-2", "nats-3"];
const LOCAL_BASE_SCRIPTS = [
  "infra/docker/local-bases/nats-entrypoint.sh",
  "infra/docker/local-bases/postgres-entrypoint.sh",
];

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
  ports?: string[];
  restart?: string;
};

/**
 * `${VAR:-default}` / `${VAR}` / `${VAR:?message}` interpolation as compose does it, against an
 * environment that sets only the required variables (no secret has a default): to `secrets[VAR]`,
 * or `p0secret` when that does not say.
 */
function interpolate(v: Json, secrets: Record<string, string> = {}): Json {
  if (typeof v === "string")
    return v.replace(
      /\$\{([A-Z0-9_]+)(?:(:\?|:?-)([^}]*))?\}/g,
      (_m, name: string, op?: string, def?: string) =>
        op === ":?" ? (secrets[name] ?? "p0secret") : (def ?? ""),
    );
  if (Array.isArray(v)) return v.map((x) => interpolate(x, secrets));
  if (v && typeof v === "object")
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, interpolate(x, secrets)]));
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

/** The raw compose file: anchors and merge keys resolved, nothing interpolated. */
const raw = parse(read("docker-compose.yml"), { merge: true }) as { services: Record<string, Service> };

/** An env file with every secret, as `sh infra/docker/env.sh FILE` writes it. */
function writeEnvFile(dir: string): string {
  const file = path.join(dir, ".env");
  execFileSync("sh", [path.join(REPO_ROOT, "infra/docker/env.sh"), file], { stdio: "pipe" });
  return file;
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

  it.skipIf(!dockerCompose())(
    "passes `docker-compose config` with the secrets set, and stops naming one that is not",
    () => {
      const dir = mkdtempSync(path.join(tmpdir(), "geode-compose-env-"));
      try {
        const envFile = writeEnvFile(dir);
        const config = (file: string) =>
          execFileSync(
            dockerCompose() as string,
            ["-f", "docker-compose.yml", "--env-file", file, "config"],
            {
              cwd: REPO_ROOT,
              encoding: "utf8",
              env: { PATH: process.env["PATH"] ?? "" },
              stdio: ["ignore", "pipe", "pipe"],
            },
          );
        const resolved = parse(config(envFile)) as { services: Record<string, Service> };
        expect(Object.keys(resolved.services).sort()).toEqual(Object.keys(services).sort());
        // Our own interpolation agrees with compose's, so the checks below hold for it too.
        const secrets = Object.fromEntries(
          (readFileSync(envFile, "utf8").match(/^[A-Z0-9_]+=.*$/gm) ?? []).map(
            (l) => l.split("=") as [string, string],
          ),
        );
        const ours = interpolate(
          parse(read("docker-compose.yml"), { merge: true }) as Json,
          secrets,
        ) as typeof model;
        for (const [name, s] of Object.entries(resolved.services))
          expect(s.environment ?? {}, name).toEqual(
            Object.fromEntries(
              Object.entries(ours.services[name]?.environment ?? {}).map(([k, v]) => [k, String(v)]),
            ),
          );
        writeFileSync(envFile, readFileSync(envFile, "utf8").replace(/^POSTGRES_PASSWORD=.*\n/m, ""));
        expect(() => config(envFile)).toThrow(/POSTGRES_PASSWORD[\s\S]*sh infra\/docker\/env\.sh/);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );

  it("has no secret with a default: each password and the console token is required, saying how to set it", () => {
    const required = /^\$\{([A-Z0-9_]+):\?set it in \.env \(sh infra\/docker\/env\.sh writes one\)\}$/;
    const text = read("docker-compose.yml");
    expect(text).not.toMatch(/dev-only|:-[^}]*(pass|secret|token)/i);
    const natsEnv = raw.services["nats"]?.environment ?? {};
    for (const [k, v] of Object.entries(natsEnv)) expect(v, k).toMatch(required);
    expect(raw.services["postgres"]?.environment?.["POSTGRES_PASSWORD"]).toMatch(required);
    expect(raw.services["console"]?.environment?.["GEODE_CONSOLE_TOKEN"]).toMatch(required);
    for (const [name, s] of Object.entries(raw.services)) {
      const pass = s.environment?.["NATS_PASS"];
      if (pass !== undefined) expect(pass, name).toMatch(required);
      const db = s.environment?.["DATABASE_URL"];
      if (db !== undefined) expect(db, name).toMatch(/\$\{POSTGRES_PASSWORD:\?/);
    }
  });

  it("infra/docker/env.sh writes every secret once, as nats-server can parse it, and adds only what is missing", () => {
    const dir = mkdtempSync(path.join(tmpdir(), "geode-compose-env-"));
    try {
      const envFile = writeEnvFile(dir);
      const written = Object.fromEntries(
        (readFileSync(envFile, "utf8").match(/^[A-Z0-9_]+=.*$/gm) ?? []).map(
          (l) => l.split("=") as [string, string],
        ),
      );
      const { GEODE_AUDIT_KEY_PATH: keyPath, ...passwords } = written;
      const wanted = [
        ...Object.keys(raw.services["nats"]?.environment ?? {}),
        "POSTGRES_PASSWORD",
        "GEODE_CONSOLE_TOKEN",
      ];
      expect(Object.keys(passwords).sort()).toEqual(wanted.sort());
      for (const v of Object.values(passwords)) expect(v).toMatch(/^[A-Za-z][A-Za-z0-9_-]{15,}$/);
      expect(new Set(Object.values(passwords)).size).toBe(wanted.length);
      expect(statSync(envFile).mode & 0o077).toBe(0);
      // The notary's key: a signer key the notary reads, in a directory only its owner enters.
      expect(keyPath).toBe(path.join(dir, ".geode/compose/audit.key"));
      const signer = readAuditKeyFile(keyPath as string);
      expect(signer.name).toBe("geode-notary");
      expect(statSync(path.dirname(keyPath as string)).mode & 0o077).toBe(0);
      const key = readFileSync(keyPath as string, "utf8");
      // Again after one is gone: that one comes back, new; the others stay as they were.
      writeFileSync(envFile, readFileSync(envFile, "utf8").replace(/^GEODE_CONSOLE_TOKEN=.*\n/m, ""));
      execFileSync("sh", [path.join(REPO_ROOT, "infra/docker/env.sh"), "--cluster", envFile], {
        stdio: "pipe",
      });
      const again = readFileSync(envFile, "utf8");
      expect(readFileSync(keyPath as string, "utf8")).toBe(key); // never replaced
      for (const [k, v] of Object.entries(written))
        if (k !== "GEODE_CONSOLE_TOKEN") expect(again).toContain(`${k}=${v}\n`);
      expect(again).toMatch(/^GEODE_CONSOLE_TOKEN=p[0-9a-f]{40}$/m);
      expect(again).not.toContain(`GEODE_CONSOLE_TOKEN=${written["GEODE_CONSOLE_TOKEN"]}`);
      expect(again).toMatch(/^COMPOSE_PROFILES=cluster$/m);
      expect(again).toMatch(/^GEODE_STREAM_REPLICAS=3$/m);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("runs NATS with JetStream and the per-role configuration, given every password variable", () => {
    const nats = services["nats"] as Service;
    expect(nats.command).toEqual(["-c", "/etc/nats/nats.conf"]);
    expect(nats.volumes).toEqual(
      expect.arrayContaining([
        "./infra/docker/nats.conf:/etc/nats/nats.conf:ro",
        "./infra/nats/geode.conf:/etc/nats/geode.conf:ro",
      ]),
    );
    const conf = read("infra/docker/nats.conf");
    expect(conf).toMatch(/^include "geode\.conf"$/m);
    expect(conf).toMatch(/^jetstream \{ store_dir: "\/data" \}$/m);
    expect(conf).toMatch(/^http_port: 8222$/m);
    expect(nats.healthcheck?.test.join(" ")).toMatch(/healthz/);
    const vars = [...read("infra/nats/geode.conf").matchAll(/password: \$([A-Z0-9_]+)/g)].map((m) => m[1]);
    expect(vars.length).toBeGreaterThan(0);
    expect(Object.keys(nats.environment ?? {}).sort()).toEqual([...vars].sort());
  });

  it("uses the base image names the local stand-ins are tagged with, and publishes ports from variables", () => {
    expect(read("Dockerfile")).toMatch(new RegExp(`^ARG NODE_IMAGE=${BASE_IMAGES.node}$`, "m"));
    for (const n of ["nats", "nats-2", "nats-3"]) expect(services[n]?.image, n).toBe(BASE_IMAGES.nats);
    expect(services["postgres"]?.image).toBe(BASE_IMAGES.postgres);
    // Today's ports on loopback by default, each from a variable (`$` + `{VAR:-default}`).
    const published = (bind: string, port: string, n: number) => [
      `$\{${bind}:-127.0.0.1}:$\{${port}:-${n}}:${n}`,
    ];
    expect(raw.services["nats"]?.ports).toEqual(published("GEODE_NATS_BIND", "GEODE_NATS_PORT", 4222));
    expect(raw.services["agent-gateway"]?.ports).toEqual(
      published("GEODE_GATEWAY_BIND", "GEODE_GATEWAY_PORT", 4280),
    );
    expect(raw.services["console"]?.ports).toEqual(
      published("GEODE_CONSOLE_BIND", "GEODE_CONSOLE_PORT", 4281),
    );
    for (const [name, s] of Object.entries(raw.services)) {
      if (name === "nats" || name === "agent-gateway" || name === "console") continue;
      expect(s.ports ?? [], name).toEqual([]);
    }
  });

  it("runs every service from one image, each health-checked with `geode health` and its own NATS user", () => {
    const users = natsUsers({ handlers: [...DEFAULT_HANDLERS] });
    const images = new Set<string | undefined>();
    for (const name of SERVICE_NAMES) {
      const s = services[name];
      expect(s, name).toBeDefined();
      images.add(s?.image);
      // The image's own health check command: `geode health $GEODE_SERVICE`.
      expect(s?.healthcheck?.test).toEqual(["CMD", "/app/infra/docker/entrypoint.sh", "health"]);
      expect(s?.restart).toBe("unless-stopped");
      expect(s?.depends_on?.["nats"]).toEqual({ condition: "service_healthy" });
      const env = s?.environment ?? {};
      expect(env["GEODE_SERVICE"]).toBe(name);
      const user = users.find((u) => u.user === env["NATS_USER"]);
      expect(user?.role, `${name} connects as its own role`).toBe(name);
      // The variable nats-server reads this user's password from.
      expect(raw.services[name]?.environment?.["NATS_PASS"], `${name}'s password`).toBe(
        raw.services["nats"]?.environment?.[user?.passwordEnv as string],
      );
      expect(raw.services[name]?.environment?.["NATS_PASS"]).toContain(`{${user?.passwordEnv}:?`);
      expect(env["NATS_URL"]).toBe("nats://nats:4222");
    }
    expect(images.size).toBe(1);
    expect(services["activity-recorder"]?.depends_on?.["postgres"]).toEqual({ condition: "service_healthy" });
    expect(services["activity-recorder"]?.environment?.["DATABASE_URL"]).toMatch(
      /^postgres:\/\/.*@postgres:5432\//,
    );
  });

  it("has a demo profile that runs `geode demo` on its NATS and PostgreSQL, and a console profile", () => {
    const demo = services["demo"] as Service;
    expect(demo.profiles).toEqual(["demo"]);
    expect(demo.command).toEqual(["geode", "demo", "--keep"]);
    expect(demo.depends_on).toEqual({
      nats: { condition: "service_healthy" },
      postgres: { condition: "service_healthy" },
    });
    const console = services["console"] as Service;
    expect(console.profiles).toEqual(["console"]);
    expect(console.command).toEqual(["geode", "console", "--host", "0.0.0.0"]);
    expect(console.healthcheck?.test.join(" ")).toContain("/api/me");
    // Only these are in a profile: a plain `docker compose up` starts NATS, Postgres and the services.
    const profiled = Object.entries(services)
      .filter(([, s]) => s.profiles !== undefined)
      .map(([n]) => n);
    expect(profiled.sort()).toEqual(["console", "demo", "nats-2", "nats-3"]);
  });

  it("has a cluster profile: nats becomes node nats-1, nats-2 and nats-3 join it, each with the users and its own store", () => {
    const stores = new Set<string>();
    for (const node of CLUSTER_NODES) {
      const service = node === "nats-1" ? "nats" : node;
      const s = services[service] as Service & { networks?: { default?: { aliases?: string[] } } };
      if (node === "nats-1") {
        expect(raw.services["nats"]?.command?.join(" ")).toMatch(
          /^-c \$\{GEODE_NATS_CONFIG:-\/etc\/nats\/nats\.conf\}$/,
        );
        expect(s.networks?.default?.aliases).toEqual(["nats-1"]);
      } else {
        expect(s.profiles, node).toEqual(["cluster"]);
        expect(s.command).toEqual(["-c", `/etc/nats/${node}.conf`]);
      }
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
      expect(raw.services[name]?.environment?.["NATS_URL"]).toMatch(
        /^\$\{GEODE_NATS_URL:-nats:\/\/nats:4222\}$/,
      );
      expect(raw.services[name]?.environment?.["GEODE_STREAM_REPLICAS"]).toMatch(
        /^\$\{GEODE_STREAM_REPLICAS:-1\}$/,
      );
    }
    // What `env.sh --cluster` writes points them there.
    const env = read("infra/docker/env.sh");
    expect(env).toContain("add GEODE_NATS_CONFIG /etc/nats/nats-1.conf");
    expect(env).toContain("add GEODE_NATS_URL nats://nats:4222,nats://nats-2:4222,nats://nats-3:4222");
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

  it("builds with the frozen lockfile and runs in a small non-root stage on the base named by NODE_IMAGE", () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    expect(text).toMatch(/pnpm install[^\n]*--frozen-lockfile/);
    for (const stage of stages) expect(stage).toMatch(/^(\$\{NODE_IMAGE\}|deps) AS \w+/);
    const runtime = stages.at(-1) as string;
    expect(runtime).toMatch(/^\$\{NODE_IMAGE\} AS runtime/);
    const users = [...runtime.matchAll(/^USER (\S+)/gm)].map((m) => m[1]);
    expect(users.at(-1)).toBe("node");
    expect(runtime).not.toMatch(/pnpm install|npm install|BUILD_CA_CERTS/);
    expect(runtime).toMatch(/ENTRYPOINT \["\/app\/infra\/docker\/entrypoint\.sh"\]/);
    expect(runtime).toMatch(
      /HEALTHCHECK [^\n]*\\\n\s+CMD \["\/app\/infra\/docker\/entrypoint\.sh", "health"\]/,
    );
    for (const label of ["title", "description", "version", "revision", "created", "base.name"])
      expect(runtime).toContain(`org.opencontainers.image.${label}=`);
  });

  it("has an entry point that runs the chosen service, its health check or the CLI as compiled JavaScript", () => {
    const entry = read("infra/docker/entrypoint.sh");
    accessSync(path.join(REPO_ROOT, "infra/docker/entrypoint.sh"), constants.X_OK);
    expect(entry).toMatch(/exec node "\/app\/services\/\$svc\/dist\/main\.js"/);
    expect(entry).toMatch(/exec node \/app\/packages\/cli\/bin\/geode\.mjs health "\$GEODE_SERVICE"/);
    expect(entry).toMatch(/exec node \/app\/packages\/cli\/bin\/geode\.mjs "\$@"/);
    expect(entry).not.toMatch(/tsx|--import/);
    expect(read("Dockerfile")).toMatch(/pnpm build/);
    for (const script of ["infra/docker/entrypoint.sh", "infra/docker/env.sh", ...LOCAL_BASE_SCRIPTS])
      execFileSync("sh", ["-n", path.join(REPO_ROOT, script)]);
  });

  it("keeps local state, dependencies, secrets and the git history out of the build context", () => {
    const ignored = read(".dockerignore")
      .split("\n")
      .map((l) => l.trim());
    for (const p of [".git", "**/node_modules", ".geode", ".env"]) expect(ignored).toContain(p);
  });
});
