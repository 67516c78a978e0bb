/** A value no one can change: every nested object and array is frozen. */
export type DeepReadonly<T> = T extends (infer U)[]
  ? readonly DeepReadonly<U>[]
  : T extends object
    ? { readonly [K in keyof T]: DeepReadonly<T[K]> }
    : T;

/** Freezes `value` and everything reachable from it, in place. */
export function deepFreeze<T>(value: T): DeepReadonly<T> {
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key]);
  }
  return value as DeepReadonly<T>;
}

/** An isolated, deep-frozen copy: what a middleware sees, so it can neither mutate nor alias it. */
export function snapshot<T>(value: T): DeepReadonly<T> {
  return deepFreeze(structuredClone(value));
}

/** A mutable deep copy of a snapshot (for terminals that expect to own their input). */
export function thaw<T>(value: DeepReadonly<T> | T): T {
  return structuredClone(value) as T;
}

/** True when `err` is what strict-mode code throws on writing to a frozen object. */
export function isFrozenWriteError(err: unknown): boolean {
  return (
    err instanceof TypeError &&
    /read[- ]only|not extensible|Cannot (add|assign|delete|define)|object is not extensible/i.test(
      err.message,
    )
  );
}
