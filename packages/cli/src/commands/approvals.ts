import { createInterface } from "node:readline/promises";
import { parseArgs } from "node:util";
import { connectBus, serveRequests } from "@geode/bus";
import {
  ApprovalLeg,
  type ApprovalReply,
  type ApprovalRequest,
  names as buildNames,
  QueueGroup,
} from "@geode/contracts";
import { loadConfig } from "@geode/service";
import { type CommandModule, intOption, UsageError } from "../command.js";

function describe(req: ApprovalRequest): string {
  const c = req.correlation;
  return `approval ${req.approval_id}: ${req.tool_name} (${req.safety_level}) session=${c.session_id || "-"} call=${c.tool_call_id || "-"}\n  ${req.detail}\n`;
}

/**
 * Answers human-approval requests on `{ns}.approval.request`: interactively (one prompt at a time)
 * or automatically with `--auto allow|deny` for scripts. `--count N` exits after N answers.
 */
export const approvalsWatchCommand: CommandModule = {
  async run(args, io) {
    const { values } = parseArgs({
      args,
      options: { auto: { type: "string" }, approver: { type: "string" }, count: { type: "string" } },
    });
    const auto = values.auto;
    if (auto !== undefined && auto !== "allow" && auto !== "deny")
      throw new UsageError(`--auto must be allow or deny, got ${auto}`);
    const count = intOption(values.count, "count") ?? Number.POSITIVE_INFINITY;
    const approver = values.approver ?? io.env["USER"] ?? "cli";
    const config = loadConfig(io.env);
    const n = buildNames(config.namespace);
    // A NATS that cannot be reached: one line and a hint, from the CLI (see runCli).
    const nc = await connectBus(config, "geode-cli approvals");
    const rl = auto === undefined ? createInterface({ input: process.stdin, output: process.stdout }) : null;
    let answered = 0;
    let done: () => void = () => undefined;
    const finished = new Promise<void>((r) => {
      done = r;
    });
    let queue = Promise.resolve();
    const decide = (req: ApprovalRequest): Promise<ApprovalReply> => {
      // One prompt at a time: requests wait their turn.
      const turn = queue.then(async (): Promise<ApprovalReply> => {
        io.out(describe(req));
        let decision: "allow" | "deny";
        if (auto !== undefined) decision = auto;
        else {
          const line = (await rl!.question("  allow? [y/N] ")).trim().toLowerCase();
          decision = line === "y" || line === "yes" ? "allow" : "deny";
        }
        io.out(`  → ${decision}\n`);
        if (++answered >= count) setImmediate(done);
        return {
          decision,
          approver,
          reason: auto !== undefined ? `--auto ${auto}` : "answered at the terminal",
        };
      });
      queue = turn.then(
        () => undefined,
        () => undefined,
      );
      return turn;
    };
    const served = serveRequests(
      nc,
      n.approvalRequest,
      { queue: QueueGroup.Approvers, request: ApprovalLeg.request },
      async (req) => ApprovalLeg.reply.encode(await decide(req)),
    );
    await nc.flush();
    io.out(`watching approvals on ${n.approvalRequest} as ${approver}${auto ? ` (auto ${auto})` : ""}\n`);
    const onSignal = () => done();
    process.once("SIGINT", onSignal);
    process.once("SIGTERM", onSignal);
    await finished;
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    await served.drain();
    rl?.close();
    await nc.drain();
    return 0;
  },
};
