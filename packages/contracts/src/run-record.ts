import { z } from "zod";

/** A run (KV `{ns}_runs`, key = the run id). */
export const RunRecordSchema = z.strictObject({
  run_id: z.string().min(1),
  status: z.enum(["active", "closed"]),
  opened_at: z.number().int(),
  closed_at: z.number().int().nullable(),
});
export type RunRecord = z.infer<typeof RunRecordSchema>;
