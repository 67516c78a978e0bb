/**
 * The value `table` holds under `key` as its own property, else undefined. Tables indexed by a
 * name from the wire are read through it: a name like `constructor`, `__proto__` or `toString`
 * must never select what every object inherits from `Object.prototype`.
 */
export function ownEntry<V>(table: Readonly<Record<string, V>>, key: string): V | undefined {
  return Object.hasOwn(table, key) ? table[key] : undefined;
}
