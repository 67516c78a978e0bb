import { encodeAuditLeaf, gapLeaf, leafHash, MerkleFrontier, messageLeaf } from "@geode/audit";
import type { AuditLogName } from "@geode/contracts";
import type { TestEnv } from "@geode/testing";
import { DeliverPolicy } from "@nats-io/jetstream";

/** The stream's tree recomputed from its retained messages alone (a gap leaf for each missing sequence). */
export async function recomputeTree(
  env: Pick<TestEnv, "js" | "jsm" | "names">,
  log: AuditLogName,
): Promise<{ size: number; root: Uint8Array }> {
  const { js, jsm, names } = env;
  const stream = names.auditStream(log);
  const info = await jsm.streams.info(stream);
  const frontier = new MerkleFrontier();
  if (info.state.messages === 0) return { size: 0, root: frontier.root() };
  const consumer = await js.consumers.get(stream, { deliver_policy: DeliverPolicy.All });
  let expected = info.state.first_seq;
  const iter = await consumer.consume();
  for await (const m of iter) {
    for (; expected < m.seq; expected++) frontier.append(leafHash(encodeAuditLeaf(gapLeaf(expected))));
    const leaf = messageLeaf({
      seq: m.seq,
      subject: m.subject,
      msgId: m.headers?.get("Nats-Msg-Id") ?? "",
      data: m.data,
    });
    frontier.append(leafHash(encodeAuditLeaf(leaf)));
    expected = m.seq + 1;
    if (m.seq >= info.state.last_seq) break;
  }
  await iter.close();
  return { size: frontier.size, root: frontier.root() };
}
