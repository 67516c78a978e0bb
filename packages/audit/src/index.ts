export {
  AUDIT_LEAF_VERSION,
  type AuditLeaf,
  DELETED_DATA_HASH,
  decodeAuditLeaf,
  encodeAuditLeaf,
  gapLeaf,
  messageLeaf,
  messageLeafHash,
} from "./audit-leaf.js";
export { fromBase64, toBase64 } from "./base64.js";
export {
  type Checkpoint,
  formatCheckpoint,
  openCheckpoint,
  parseCheckpoint,
  signCheckpoint,
} from "./checkpoint.js";
export { AuditError, AuditErrorCode } from "./errors.js";
export {
  frontierAt,
  type HashStore,
  MemoryHashStore,
  rangeHashes,
  type TreeRange,
  treeRoot,
} from "./hash-store.js";
export {
  DEFAULT_AUDIT_KEY_FILE,
  DEFAULT_AUDIT_KEY_NAME,
  readAuditKeyFile,
  writeAuditKeyFile,
} from "./key-file.js";
export { type FrontierSnapshot, MerkleFrontier, type TreeNode } from "./merkle-frontier.js";
export { consistencyProof, inclusionProof } from "./merkle-proof.js";
export {
  generateNoteKey,
  isValidKeyName,
  type NoteSigner,
  type NoteVerifier,
  noteKeyHash,
  noteSigner,
  noteVerifier,
} from "./note-key.js";
export {
  type ConsistencyProof,
  type InclusionProof,
  rootFromInclusionProof,
  verifyConsistency,
  verifyInclusion,
} from "./proof-verify.js";
export { NOTE_LIMITS, type NoteSignature, type OpenedNote, openNote, signNote } from "./signed-note.js";
export { EMPTY_ROOT, HASH_SIZE, leafHash, nodeHash, sameHash } from "./tree-hash.js";
export { type NodeId, splitSize, subtreeNodes } from "./tree-range.js";
