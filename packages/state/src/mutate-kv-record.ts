import { encodeJson, isRevisionConflict } from "@geode/bus";
import { ErrorCode, GeodeError } from "@geode/contracts";
import type { KV, KvEntry } from "@nats-io/kv";

/** Thrown by a `mutateKvRecord` update function to leave the key as it is. */
export class KeepRecord extends Error {
  override readonly name = "KeepRecord";
}

/** Attempts of one read-modify-write before it gives up with `unavailable`. */
export const MAX_CAS_ATTEMPTS = 50;

/** True for an entry that holds a value (not absent, not a delete or purge tombstone). */
export function isLive(entry: KvEntry | null): entry is KvEntry & { operation: "PUT" } {
  return entry !== null && entry.operation === "PUT";
}

export interface MutateOptions {
  /** A stored value that does not parse counts as absent and is overwritten (default: the parse error is thrown). */
  replaceMalformed?: boolean;
}

export interface MutateResult<T> {
  /** False when the update function threw `KeepRecord`. */
  written: boolean;
  /** The value written, or (not written) the current one. */
  value: T | null;
  revision: number;
}

/**
 * The one compare-and-swap of the house: a revision-checked read-modify-write of one JSON KV value.
 * Reads the key (null if absent or deleted), calls `update`, and writes with `create` (absent) or
 * `update(…, revision)`; on a revision conflict it reads again and retries, so concurrent writers
 * never lose or double-apply a change. `update` may throw `KeepRecord` to write nothing
 * (`written: false`), or any other error to abort.
 */
export async function mutateKvRecord<T>(
  kv: KV,
  key: string,
  parse: (raw: unknown) => T,
  update: (current: T | null) => T | Promise<T>,
  options: MutateOptions = {},
): Promise<MutateResult<T>> {
  const read = (entry: KvEntry): T | null => {
    try {
      return parse(entry.json());
    } catch (err) {
      if (options.replaceMalformed) return null;
      throw err;
    }
  };
  for (let attempt = 0; attempt < MAX_CAS_ATTEMPTS; attempt++) {
    const entry = await kv.get(key);
    const current = isLive(entry) ? read(entry) : null;
    let next: T;
    try {
      next = await update(current);
    } catch (err) {
      if (err instanceof KeepRecord)
        return { written: false, value: current, revision: entry?.revision ?? 0 };
      throw err;
    }
    try {
      const revision =
        entry === null
          ? await kv.create(key, encodeJson(next))
          : // live, deleted or purged: only if nobody wrote since we read
            await kv.update(key, encodeJson(next), entry.revision);
      return { written: true, value: next, revision };
    } catch (err) {
      if (!isRevisionConflict(err)) throw err;
    }
  }
  throw new GeodeError(ErrorCode.Unavailable, `too many concurrent updates of ${key}`);
}
