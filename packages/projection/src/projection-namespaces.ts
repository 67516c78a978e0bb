import { NAMESPACE_PATTERN } from "@geode/contracts";
import { type Kysely, sql } from "kysely";

/**
 * The namespaces with a projection in this database (a schema that holds `activity_events`), with
 * the number of activity rows of each, by name.
 */
// biome-ignore lint/suspicious/noExplicitAny: queries across schemas are untyped.
export async function projectionNamespaces(root: Kysely<any>): Promise<Map<string, number>> {
  const schemas = await sql<{ schema: string }>`
    select table_schema as schema from information_schema.tables
    where table_name = 'activity_events' order by table_schema`.execute(root);
  const counts = new Map<string, number>();
  for (const { schema } of schemas.rows) {
    if (!NAMESPACE_PATTERN.test(schema)) continue;
    const r = await sql<{
      n: string | number;
    }>`select count(*) as n from ${sql.table(`${schema}.activity_events`)}`.execute(root);
    counts.set(schema, Number(r.rows[0]?.n ?? 0));
  }
  return counts;
}

/** The run ids of a namespace's projection (its `activity_events`); empty when it has none. */
// biome-ignore lint/suspicious/noExplicitAny: queries across schemas are untyped.
export async function projectionRunIds(root: Kysely<any>, ns: string): Promise<string[]> {
  if (!(await projectionNamespaces(root)).has(ns)) return [];
  const r = await sql<{ run_id: string }>`
    select distinct run_id from ${sql.table(`${ns}.activity_events`)} where run_id <> ''`.execute(root);
  return r.rows.map((row) => row.run_id);
}
