import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import {
  encodeAuditLeaf,
  inclusionProof,
  leafHash,
  messageLeaf,
  parseCheckpoint,
  toBase64,
} from "@geode/audit";
import { connectBus } from "@geode/bus";
import { type AuditCheckpointMessage, names as buildNames, type Names } from "@geode/contracts";
import { AuditTreeStore, type ProjectionDb } from "@geode/projection";
import { loadConfig } from "@geode/service";
import { DeliverPolicy, type JsMsg, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { type LogName, logsOption, oneLogOption } from "../audit/audit-options.js";
import { readCheckpoints, readStoredLog } from "../audit/audit-tables.js";
import type { MessageFile, ProofFile } from "../audit/proof-file.js";
import { readStream } from "../audit/read-stream.js";
import { type CommandIO, type CommandModule, intOption, UsageError } from "../command.js";
import { openExistingProjection } from "../projection-from-env.js";

/** The size a signed note's checkpoint claims. */
function noteSize(note: string): number {
  return parseCheckpoint(note.slice(0, note.indexOf("\n\n") + 1)).size;
}

/** The proof of stream sequence `seq` against the stored checkpoint `note` (which must cover it). */
async function proveSeq(
  projection: ProjectionDb,
  log: LogName,
  firstSeq: number,
  note: string,
  seq: number,
): Promise<ProofFile> {
  const size = noteSize(note);
  const index = seq - firstSeq;
  const tree = new AuditTreeStore(projection.root, projection.ns, log);
  const [leaf] = await tree.nodes([{ level: 0, index }]);
  const proofPath = await inclusionProof(tree, { index, size });
  return {
    log,
    seq,
    leaf_index: index,
    tree_size: size,
    leaf_hash: toBase64(leaf!),
    path: proofPath.map(toBase64),
    checkpoint: note,
  };
}

async function withProjection(
  io: CommandIO,
  command: string,
  body: (p: ProjectionDb, names: Names) => Promise<number>,
): Promise<number> {
  const config = loadConfig(io.env);
  const projection = await openExistingProjection(config, command, io, false);
  if (!projection) return 1;
  try {
    return await body(projection, buildNames(config.namespace));
  } finally {
    await projection.close();
  }
}

/**
 * `geode audit prove SEQ [--log L]`: the inclusion proof of one stream sequence against the latest
 * stored checkpoint, as JSON `{log, seq, leaf_index, tree_size, leaf_hash, path, checkpoint}`.
 */
export const auditProveCommand: CommandModule = {
  async run(args, io) {
    const { values, positionals } = parseArgs({
      args,
      allowPositionals: true,
      options: { log: { type: "string" } },
    });
    const [raw, ...rest] = positionals;
    if (raw === undefined || rest.length > 0) throw new UsageError("give exactly one stream sequence");
    const seq = intOption(raw, "SEQ")!;
    const log = oneLogOption(values.log);
    return withProjection(io, "geode audit prove", async (projection) => {
      const stored = await readStoredLog(projection.root, projection.ns, log);
      const latest = (await readCheckpoints(projection.root, projection.ns, log)).at(-1);
      if (!stored || !latest) {
        io.err(`geode audit prove: log ${log} has no signed checkpoint yet (is the notary running?)\n`);
        return 1;
      }
      if (seq < stored.firstSeq || seq - stored.firstSeq >= latest.size) {
        io.err(
          `geode audit prove: seq ${seq} is not in the latest checkpoint of log ${log} (seq ${stored.firstSeq}..${stored.firstSeq + latest.size - 1})\n`,
        );
        return 1;
      }
      io.out(
        `${JSON.stringify(await proveSeq(projection, log, stored.firstSeq, latest.note, seq), null, 2)}\n`,
      );
      return 0;
    });
  },
};

/** `geode audit checkpoint [--log L]`: the latest published checkpoint, the note exactly as signed. */
export const auditCheckpointCommand: CommandModule = {
  async run(args, io) {
    const { values } = parseArgs({ args, options: { log: { type: "string" } } });
    const log = oneLogOption(values.log);
    const config = loadConfig(io.env);
    const n = buildNames(config.namespace);
    const nc = await connectBus(config, "geode-cli audit checkpoint");
    try {
      const jsm = await jetstreamManager(nc);
      const m = await jsm.streams
        .getMessage(n.checkpointsStream, { last_by_subj: n.auditCheckpoint(log) })
        .catch(() => null);
      if (!m) {
        io.err(`geode audit checkpoint: log ${log} has no checkpoint yet (is the notary running?)\n`);
        return 1;
      }
      io.out((m.json() as AuditCheckpointMessage).note);
      return 0;
    } finally {
      await nc.drain().catch(() => undefined);
    }
  },
};

/** `--since`/`--until`: an ISO 8601 time or epoch milliseconds. */
function timeOption(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const ms = /^[0-9]+$/.test(value) ? Number(value) : Date.parse(value);
  if (!Number.isFinite(ms))
    throw new UsageError(`--${flag} must be an ISO 8601 time or epoch ms, got ${value}`);
  return ms;
}

/** Writes one message and its inclusion proof into the export's `dir`; its line of `messages.jsonl`. */
async function exportMessage(
  m: JsMsg,
  x: {
    projection: ProjectionDb;
    log: LogName;
    stream: string;
    firstSeq: number;
    note: string;
    dir: string;
    io: CommandIO;
    /** When the stream stored it, epoch ms. */
    time: number;
  },
): Promise<string> {
  const { projection, log, stream, firstSeq, note, dir, io, time } = x;
  const msgId = m.headers?.get("Nats-Msg-Id") ?? "";
  const message: MessageFile = {
    log,
    seq: m.seq,
    subject: m.subject,
    msg_id: msgId,
    time,
    data_base64: toBase64(m.data),
    data: new TextDecoder().decode(m.data),
  };
  const proof = await proveSeq(projection, log, firstSeq, note, m.seq);
  const expected = toBase64(
    leafHash(encodeAuditLeaf(messageLeaf({ seq: m.seq, subject: m.subject, msgId, data: m.data }))),
  );
  if (expected !== proof.leaf_hash)
    io.err(`geode audit export: warning: seq ${m.seq} of ${stream} is not the leaf the log holds\n`);
  writeFileSync(path.join(dir, "messages", `${m.seq}.json`), `${JSON.stringify(message, null, 2)}\n`);
  writeFileSync(path.join(dir, "proofs", `${m.seq}.json`), `${JSON.stringify(proof, null, 2)}\n`);
  return JSON.stringify(message);
}

/**
 * `geode audit export --since T [--until T] [--log L] --out DIR`: per log, the messages the stream
 * stored in the period (`{log}/messages.jsonl`, and one file each in `{log}/messages/`), the
 * inclusion proof of each (`{log}/proofs/{seq}.json`) against the latest checkpoint, which covers
 * them all (`{log}/checkpoint.note`): an auditor checks each with `geode audit check-proof` alone.
 */
export const auditExportCommand: CommandModule = {
  async run(args, io) {
    const { values } = parseArgs({
      args,
      options: {
        since: { type: "string" },
        until: { type: "string" },
        log: { type: "string" },
        out: { type: "string" },
      },
    });
    const since = timeOption(values.since, "since");
    if (since === undefined) throw new UsageError("give --since T");
    const until = timeOption(values.until, "until") ?? Number.POSITIVE_INFINITY;
    if (values.out === undefined) throw new UsageError("give --out DIR");
    const out = values.out;
    const logs = logsOption(values.log);
    return withProjection(io, "geode audit export", async (projection, n) => {
      const nc = await connectBus(loadConfig(io.env), "geode-cli audit export");
      try {
        const js = jetstream(nc);
        const jsm = await jetstreamManager(nc);
        for (const log of logs) {
          const stored = await readStoredLog(projection.root, projection.ns, log);
          const latest = (await readCheckpoints(projection.root, projection.ns, log)).at(-1);
          const dir = path.join(out, log);
          mkdirSync(path.join(dir, "messages"), { recursive: true });
          mkdirSync(path.join(dir, "proofs"), { recursive: true });
          const lines: string[] = [];
          let uncovered = 0;
          const stream = n.auditStream(log);
          const info = await jsm.streams.info(stream).catch(() => undefined);
          if (stored && latest && info && info.state.messages > 0) {
            const lastCovered = stored.firstSeq + latest.size - 1;
            const start = {
              deliver_policy: DeliverPolicy.StartTime,
              opt_start_time: new Date(since).toISOString(),
            };
            await readStream(js, stream, start, info.state.last_seq, async (m) => {
              {
                const time = Math.floor(m.info.timestampNanos / 1e6);
                if (time > until) return false;
                if (m.seq > lastCovered) {
                  uncovered = info.state.last_seq - m.seq + 1;
                  return false;
                }
                lines.push(
                  await exportMessage(m, {
                    projection,
                    log,
                    stream,
                    firstSeq: stored.firstSeq,
                    note: latest.note,
                    dir,
                    io,
                    time,
                  }),
                );
                return true;
              }
            });
          }
          writeFileSync(path.join(dir, "messages.jsonl"), lines.length ? `${lines.join("\n")}\n` : "");
          if (latest) writeFileSync(path.join(dir, "checkpoint.note"), latest.note);
          io.out(
            `${log}: ${lines.length} messages with their proofs in ${dir}` +
              (latest ? ` (checkpoint of size ${latest.size})` : " (no checkpoint yet)") +
              (uncovered > 0
                ? `; ${uncovered} newer messages are not in a checkpoint yet, export them later`
                : "") +
              "\n",
          );
        }
        return 0;
      } finally {
        await nc.drain().catch(() => undefined);
      }
    });
  },
};
