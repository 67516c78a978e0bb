import { existsSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { CODEX_EVENTS } from "@geode/contracts";
import { loadConfig } from "@geode/service";
import { parse } from "smol-toml";
import type { CommandIO, CommandModule } from "../command.js";
import { listCodexHooks } from "../connect/codex-app-server.js";
import {
  BLOCK_BEGIN,
  codexHooks,
  hooksToml,
  mergeCodexConfig,
  trustKeysOutsideBlock,
  trustToml,
} from "../connect/codex-config.js";
import { writeAtomically } from "../connect/config-file.js";
import { parseConnectArgs } from "../connect/connect-args.js";
import { guardedModes, nestedHooksOf, printedLine, wroteLine } from "../connect/fail-mode.js";
import { type AgentCheck, reportCheck } from "../connect/gateway-check.js";
import { TOKEN_ENV } from "../connect/hook-command.js";
import { hooksNotRun } from "../connect/hooks-not-run.js";

/** Where Codex reads managed hooks (trusted by definition; writing there needs root). */
const MANAGED_FILE = "/etc/codex/requirements.toml";

/** The user config Codex reads: `$CODEX_HOME/config.toml`, else `~/.codex/config.toml`. */
function userConfig(env: NodeJS.ProcessEnv): string {
  const home = env["CODEX_HOME"] || path.join(env["HOME"] || os.homedir(), ".codex");
  return path.join(home, "config.toml");
}

const isGeodeHook = (command: string | null, endpoint: string) => command?.includes(endpoint) === true;

interface Options {
  endpoint: string;
  file: string;
  managed: boolean;
  codex: string;
  failClosed: boolean;
}

/**
 * Records trust for the hooks just written, the way Codex does: `codex app-server` lists each hook
 * with the hash Codex computes, and `[hooks.state."<key>"] trusted_hash` goes into geode's block.
 * Returns null once Codex lists every one as trusted, else what is wrong.
 */
async function trustHooks(o: Options, hooksBody: string, io: CommandIO): Promise<string | null> {
  let listing: Awaited<ReturnType<typeof listCodexHooks>>;
  try {
    listing = await listCodexHooks({ codex: o.codex, cwd: process.cwd(), env: io.env });
  } catch (err) {
    return `${err instanceof Error ? err.message : err}`;
  }
  const ours = listing.hooks.filter((h) => h.sourcePath === o.file && isGeodeHook(h.command, o.endpoint));
  if (ours.length === 0)
    return `Codex does not list the hooks written to ${o.file} (does it read this file? CODEX_HOME)`;
  const text = readFileSync(o.file, "utf8");
  const taken = trustKeysOutsideBlock(text);
  const clash = ours.find((h) => taken.has(h.key));
  if (clash)
    return `${o.file} already has a trust record for ${clash.key} outside geode's block: remove it and run again`;
  writeAtomically(
    o.file,
    mergeCodexConfig(
      text,
      `${hooksBody}\n${trustToml(ours.map((h) => ({ key: h.key, hash: h.currentHash })))}`,
    ),
  );
  const after = await listCodexHooks({ codex: o.codex, cwd: process.cwd(), env: io.env });
  const untrusted = after.hooks.find(
    (h) => h.sourcePath === o.file && isGeodeHook(h.command, o.endpoint) && h.trustStatus !== "trusted",
  );
  return untrusted ? `Codex still lists ${untrusted.key} as ${untrusted.trustStatus}` : null;
}

async function write(o: Options, io: CommandIO): Promise<number> {
  const hooksBody = hooksToml(
    codexHooks({
      endpoint: o.endpoint,
      approvalTimeoutMs: loadConfig(io.env).approvalTimeoutMs,
      failClosed: o.failClosed,
    }),
  );
  const current = existsSync(o.file) ? readFileSync(o.file, "utf8") : "";
  let merged: string;
  try {
    merged = mergeCodexConfig(current, hooksBody);
  } catch (err) {
    io.err(
      `${o.file} would not be valid TOML with the hooks (${err instanceof Error ? err.message.split("\n")[0] : err}); nothing written\n`,
    );
    return 1;
  }
  writeAtomically(o.file, merged);
  io.out(
    wroteLine({
      failClosed: o.failClosed,
      count: CODEX_EVENTS.length,
      agent: "Codex",
      file: o.file,
      endpoint: o.endpoint,
    }),
  );
  if (o.managed) {
    io.out(`Managed hooks need no trust. Codex reads the agent token from ${TOKEN_ENV}.\n`);
    return 0;
  }
  const problem = await trustHooks(o, hooksBody, io);
  if (problem !== null)
    return hooksNotRun(
      io,
      "Codex",
      `they are not trusted (${problem}), and Codex skips untrusted hooks silently in \`codex exec\`: approve them in Codex (/hooks), run this again where \`codex\` runs (--codex BIN), or write them as managed hooks (--managed, as root)`,
    );
  io.out(`Codex trusts them now (recorded in ${o.file}). Codex reads the agent token from ${TOKEN_ENV}.\n`);
  return 0;
}

/** The Codex side of `--check`: hooks where Codex reads them, valid TOML, listed by Codex, trusted. */
async function codexSide(o: Options, io: CommandIO): Promise<AgentCheck> {
  const fail = (problem: string) => ({ problem });
  const files = [o.file, ...(o.file === MANAGED_FILE ? [] : [MANAGED_FILE])].filter((f) => existsSync(f));
  const withBlock = files.filter((f) => readFileSync(f, "utf8").includes(BLOCK_BEGIN));
  if (withBlock.length === 0)
    return fail(
      `no geode hooks in ${[o.file, MANAGED_FILE].join(" or ")}: run geode connect codex --write ${o.file}`,
    );
  const configs: unknown[] = [];
  for (const f of withBlock) {
    try {
      configs.push((parse(readFileSync(f, "utf8")) as { hooks?: unknown }).hooks);
    } catch (err) {
      return fail(
        `${f} is not valid TOML, so Codex ignores all of it: ${err instanceof Error ? err.message.split("\n")[0] : err}`,
      );
    }
  }
  let listing: Awaited<ReturnType<typeof listCodexHooks>>;
  try {
    listing = await listCodexHooks({ codex: o.codex, cwd: process.cwd(), env: io.env });
  } catch (err) {
    return fail(
      `cannot ask Codex which hooks it runs: ${err instanceof Error ? err.message : err} (pass --codex BIN)`,
    );
  }
  if (listing.errors.length > 0) return fail(`Codex cannot read its hooks: ${listing.errors[0]}`);
  const ours = listing.hooks.filter((h) => isGeodeHook(h.command, o.endpoint));
  if (ours.length === 0) return fail(`Codex lists no hook that calls ${o.endpoint} (another --url?)`);
  const skipped = ours.find((h) => h.trustStatus !== "trusted" && h.trustStatus !== "managed");
  if (skipped)
    return fail(
      `hook ${skipped.key} is ${skipped.trustStatus}: codex exec skips it silently; run geode connect codex --write ${skipped.sourcePath} again`,
    );
  return {
    ok: `${ours.length} hooks, each ${ours.every((h) => h.trustStatus === "managed") ? "managed" : "trusted"}`,
    modes: guardedModes(CODEX_EVENTS, (event) => configs.flatMap((hooks) => nestedHooksOf(hooks, event))),
  };
}

/**
 * `geode connect codex`: prints (or `--write`s into a Codex config, trusted the way Codex records
 * trust; `--managed` into its managed requirements) the hooks that send every mapped Codex event to
 * the agent gateway; `--check` proves Codex will run them.
 */
export const connectCodexCommand: CommandModule = {
  async run(args, io) {
    const { values, endpoint, failClosed } = parseConnectArgs(args, io.env, "codex", {
      managed: { type: "boolean", default: false },
      check: { type: "boolean", default: false },
      codex: { type: "string" },
    });
    const managed = values.managed === true;
    const o: Options = {
      endpoint,
      file: path.resolve(values.write ?? (managed ? MANAGED_FILE : userConfig(io.env))),
      managed,
      codex: values.codex ?? "codex",
      failClosed,
    };
    if (values.check) return reportCheck(endpoint, io, await codexSide(o, io));
    if (values.write === undefined && !managed) {
      io.err(printedLine(failClosed));
      io.out(
        hooksToml(
          codexHooks({
            endpoint,
            approvalTimeoutMs: loadConfig(io.env).approvalTimeoutMs,
            failClosed: o.failClosed,
          }),
        ),
      );
      return 0;
    }
    return write(o, io);
  },
};
