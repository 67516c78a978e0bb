import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { parseCheckpoint } from "@geode/audit";
import { connectBus } from "@geode/bus";
import { names as buildNames } from "@geode/contracts";
import { loadConfig } from "@geode/service";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { logsOption, verifierOption } from "../audit/audit-options.js";
import { divergenceText, type LogVerdict, verifyLog } from "../audit/verify-log.js";
import { type CommandIO, type CommandModule, UsageError } from "../command.js";
import { openExistingProjection } from "../projection-from-env.js";

/** A progress bar on a terminal, on stderr; nothing otherwise. */
function progress(io: CommandIO, label: string): ((done: number, total: number) => void) | undefined {
  if (!io.isTTY) return undefined;
  let shown = -1;
  return (done, total) => {
    const ratio = total === 0 ? 1 : Math.min(1, done / total);
    const pct = Math.floor(ratio * 100);
    if (pct === shown && done < total) return;
    shown = pct;
    const width = 30;
    const filled = Math.round(ratio * width);
    io.err(
      `\r${label} [${"#".repeat(filled)}${".".repeat(width - filled)}] ${String(pct).padStart(3)}% ${done.toLocaleString("en-US")}/${total.toLocaleString("en-US")}${done >= total ? "\n" : ""}`,
    );
  };
}

/** The origin a checkpoint note names (its first line), to give it to its log. */
function noteOrigin(note: string): string {
  const at = note.indexOf("\n\n");
  try {
    return parseCheckpoint(note.slice(0, at < 0 ? note.length : at + 1)).origin;
  } catch {
    throw new UsageError("--checkpoint is not a checkpoint note");
  }
}

/** Says what the verification found (a summary per log, or the first divergence); the exit code. */
function report(verdicts: LogVerdict[], json: boolean, io: CommandIO): number {
  const failed = verdicts.find((v) => v.divergence);
  if (json) {
    io.out(
      `${JSON.stringify({
        ok: !failed,
        ...(failed
          ? {
              divergence: {
                log: failed.log,
                message: divergenceText(failed.divergence!),
                ...failed.divergence,
              },
            }
          : {}),
        logs: verdicts,
      })}\n`,
    );
    return failed ? 1 : 0;
  }
  if (failed) {
    // The divergence alone on stdout, so a script reads one line; where, on stderr.
    io.out(`${divergenceText(failed.divergence!)}\n`);
    io.err(`geode audit verify: log ${failed.origin} (stream ${failed.stream}) diverges\n`);
    return 1;
  }
  for (const v of verdicts) {
    io.out(
      `${v.origin}: ok, ${v.leaves.toLocaleString("en-US")} leaves (${v.retained.toLocaleString("en-US")} re-read from ${v.stream}), ` +
        `${v.checkpoints} checkpoint${v.checkpoints === 1 ? "" : "s"} verified (latest of size ${v.checkpoint_size})` +
        `${v.projection_rows_checked ? ", projection rows match" : ""}\n`,
    );
  }
  return 0;
}

/**
 * `geode audit verify [--log events|timeline] [--key VKEY] [--checkpoint FILE]… [--projection]
 * [--json]` (DESIGN section 20): each log re-read and recomputed; exit 0 and a summary when every
 * check holds, else the first divergence named on one line and exit 1.
 */
export const auditVerifyCommand: CommandModule = {
  async run(args, io) {
    const { values } = parseArgs({
      args,
      options: {
        log: { type: "string" },
        key: { type: "string" },
        checkpoint: { type: "string", multiple: true },
        projection: { type: "boolean", default: false },
        json: { type: "boolean", default: false },
      },
    });
    const logs = logsOption(values.log);
    const verifier = verifierOption(values.key, io.env, true);
    const config = loadConfig(io.env);
    const n = buildNames(config.namespace);
    const extra = (values.checkpoint ?? []).map((file) => {
      const note = readFileSync(file, "utf8");
      return { file, note, origin: noteOrigin(note) };
    });
    for (const e of extra) {
      if (!logs.some((l) => n.auditLog(l) === e.origin))
        throw new UsageError(`--checkpoint ${e.file} is of ${e.origin}, not a log verified here`);
    }
    const projection = await openExistingProjection(config, "geode audit verify", io, false);
    if (!projection) return 1;
    const nc = await connectBus(config, "geode-cli audit verify");
    try {
      const js = jetstream(nc);
      const jsm = await jetstreamManager(nc);
      const verdicts: LogVerdict[] = [];
      for (const log of logs) {
        const v = await verifyLog({
          js,
          jsm,
          names: n,
          projection,
          log,
          verifier,
          extraCheckpoints: extra.filter((e) => e.origin === n.auditLog(log)).map((e) => e.note),
          checkProjection: values.projection,
          onProgress: values.json ? undefined : progress(io, `verify ${log}`),
        });
        verdicts.push(v);
        if (v.divergence) break;
      }
      return report(verdicts, values.json, io);
    } finally {
      await nc.drain().catch(() => undefined);
      await projection.close();
    }
  },
};
