import { z } from "zod";
import { RequestCorrelationSchema } from "./correlation.js";

/* The `{ns}.approval.request` leg: what a human approver is asked, and answers. */

export const ApprovalRequestSchema = z.strictObject({
  approval_id: z.string().min(1),
  tool_name: z.string(),
  safety_level: z.string(),
  detail: z.string(),
  correlation: RequestCorrelationSchema,
});
export type ApprovalRequest = z.infer<typeof ApprovalRequestSchema>;
export const ApprovalReplySchema = z.strictObject({
  decision: z.enum(["allow", "deny"]),
  approver: z.string().min(1),
  reason: z.string().optional(),
});
export type ApprovalReply = z.infer<typeof ApprovalReplySchema>;
