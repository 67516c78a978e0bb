import {
  type Checkpoint,
  encodeAuditLeaf,
  fromBase64,
  leafHash,
  messageLeaf,
  type NoteVerifier,
  openCheckpoint,
  rootFromInclusionProof,
  sameHash,
  toBase64,
} from "@geode/audit";

/** `geode audit prove`'s output (DESIGN section 20); hashes base64, `path` leaf first (RFC 9162). */
export interface ProofFile {
  log: string;
  seq: number;
  leaf_index: number;
  tree_size: number;
  leaf_hash: string;
  path: string[];
  /** The signed note of the checkpoint of `tree_size`, exactly as signed. */
  checkpoint: string;
}

/** One exported stream message: what its leaf is made of, the data base64 (and as text to read). */
export interface MessageFile {
  log: string;
  seq: number;
  subject: string;
  msg_id: string;
  /** Epoch milliseconds the stream stored it. */
  time: number;
  data_base64: string;
  /** The data as UTF-8 text, for people; `data_base64` is what is hashed. */
  data: string;
}

/** The leaf hash of an exported message, base64. */
function messageLeafHash(m: Pick<MessageFile, "seq" | "subject" | "msg_id" | "data_base64">): string {
  const data = fromBase64(m.data_base64);
  if (!data) throw new Error("data_base64 is not base64");
  return toBase64(
    leafHash(encodeAuditLeaf(messageLeaf({ seq: m.seq, subject: m.subject, msgId: m.msg_id, data }))),
  );
}

/** Why a proof does not hold (undefined when it holds): offline, from the file, the key and the message alone. */
export function checkProof(
  proof: ProofFile,
  verifier: NoteVerifier,
  message?: MessageFile,
): string | undefined {
  let checkpoint: Checkpoint;
  try {
    checkpoint = openCheckpoint(proof.checkpoint, { verifiers: [verifier] }).checkpoint;
  } catch (err) {
    return `bad signature: the checkpoint is not signed by the key (${(err as Error).message})`;
  }
  if (!checkpoint.origin.endsWith(`/${proof.log}`))
    return `the checkpoint is of ${checkpoint.origin}, not of log ${proof.log}`;
  if (checkpoint.size !== proof.tree_size)
    return `the proof is for a tree of ${proof.tree_size} leaves, its checkpoint of ${checkpoint.size}`;
  const leaf = fromBase64(proof.leaf_hash);
  const path = proof.path.map((p) => fromBase64(p));
  if (!leaf || path.some((p) => !p)) return "a hash of the proof is not base64";
  let root: Uint8Array;
  try {
    root = rootFromInclusionProof({
      index: proof.leaf_index,
      size: proof.tree_size,
      leafHash: leaf,
      path: path as Uint8Array[],
    });
  } catch (err) {
    return `the path is not a proof: ${(err as Error).message}`;
  }
  if (!sameHash(root, checkpoint.rootHash))
    return `the path does not lead to the checkpoint's root (leaf ${proof.leaf_index} of ${proof.tree_size})`;
  if (message) {
    if (message.seq !== proof.seq)
      return `the message is seq ${message.seq}, the proof is of seq ${proof.seq}`;
    if (messageLeafHash(message) !== proof.leaf_hash)
      return `the message is not the proven leaf (seq ${proof.seq})`;
  }
  return undefined;
}
