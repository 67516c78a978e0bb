import { AuditError, AuditErrorCode, type HashStore, type NodeId } from "@geode/audit";
import { type Kysely, sql } from "kysely";

/**
 * One log's tree in `{ns}.audit_tree` (written by the notary) as `@geode/audit`'s HashStore, for
 * proofs: one query per call, whatever the number of nodes asked. The notary proves with it and
 * `geode audit prove` and `export` read with it.
 */
export class AuditTreeStore implements HashStore {
  constructor(
    // biome-ignore lint/suspicious/noExplicitAny: the audit tables are not part of the projection's typed schema
    private readonly db: Kysely<any>,
    private readonly ns: string,
    private readonly log: string,
  ) {}

  async nodes(ids: readonly NodeId[]): Promise<readonly Uint8Array[]> {
    if (ids.length === 0) return [];
    const r = await sql<{ level: number; idx: string; hash: Buffer }>`
      select t.level, t.idx, t.hash from ${sql.id(this.ns, "audit_tree")} t
      join unnest(${ids.map((id) => id.level)}::smallint[], ${ids.map((id) => String(id.index))}::bigint[])
        as want(level, idx) on t.level = want.level and t.idx = want.idx
      where t.log = ${this.log}`.execute(this.db);
    const byKey = new Map(r.rows.map((row) => [`${row.level}/${row.idx}`, new Uint8Array(row.hash)]));
    return ids.map((id) => {
      const hash = byKey.get(`${id.level}/${id.index}`);
      if (!hash)
        throw new AuditError(AuditErrorCode.MissingNode, "the audit tree lacks a node", {
          details: { ...id },
        });
      return hash;
    });
  }
}
