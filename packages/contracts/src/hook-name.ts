import { z } from "zod";

/** The 13 public hooks of `geode.public-hook.v2`, in the order of docs/hooks.md. */
export const HookName = {
  UserPromptSubmit: "UserPromptSubmit",
  PreToolUse: "PreToolUse",
  PermissionRequest: "PermissionRequest",
  PostToolUse: "PostToolUse",
  PreCompact: "PreCompact",
  PostCompact: "PostCompact",
  SessionStart: "SessionStart",
  SessionEnd: "SessionEnd",
  SubagentStart: "SubagentStart",
  SubagentStop: "SubagentStop",
  PreVerify: "PreVerify",
  PostVerify: "PostVerify",
  Stop: "Stop",
} as const;
export type HookName = (typeof HookName)[keyof typeof HookName];
export const HOOK_NAMES = Object.values(HookName) as [HookName, ...HookName[]];
export const HookNameSchema = z.enum(HOOK_NAMES);

export function isHookName(value: unknown): value is HookName {
  return typeof value === "string" && (HOOK_NAMES as readonly string[]).includes(value);
}

/** Every action any hook may return. */
export const HookAction = {
  Continue: "continue",
  Rewrite: "rewrite",
  Block: "block",
  RequestPermission: "request_permission",
  Allow: "allow",
  Deny: "deny",
  Ask: "ask",
  AddContext: "add_context",
  Defer: "defer",
  Strengthen: "strengthen",
  Accept: "accept",
  Revise: "revise",
  Escalate: "escalate",
  Finalize: "finalize",
} as const;
export type HookAction = (typeof HookAction)[keyof typeof HookAction];
export const HOOK_ACTIONS = Object.values(HookAction) as [HookAction, ...HookAction[]];

/** The allowed-actions table: each hook returns only its own typed decisions. */
export const ALLOWED_ACTIONS = {
  UserPromptSubmit: ["continue", "rewrite", "block"],
  PreToolUse: ["continue", "rewrite", "block", "request_permission"],
  PermissionRequest: ["allow", "deny", "ask"],
  PostToolUse: ["continue", "add_context", "block"],
  PreCompact: ["continue", "rewrite", "defer"],
  PostCompact: ["continue"],
  SessionStart: ["continue"],
  SessionEnd: ["continue"],
  SubagentStart: ["continue"],
  SubagentStop: ["continue"],
  PreVerify: ["continue", "strengthen"],
  PostVerify: ["accept", "revise", "escalate"],
  Stop: ["finalize", "continue"],
} as const satisfies Record<HookName, readonly HookAction[]>;

/** Hooks whose registrations may filter by tool name (`match`). */
export const TOOL_HOOKS: readonly HookName[] = ["PreToolUse", "PermissionRequest", "PostToolUse"];

export const SchemaVersion = {
  V1: "geode.public-hook.v1",
  V2: "geode.public-hook.v2",
} as const;
export type SchemaVersion = (typeof SchemaVersion)[keyof typeof SchemaVersion];
export const SchemaVersionSchema = z.enum([SchemaVersion.V1, SchemaVersion.V2]);
/** Short version labels used by the CLI and `publicHookSchema`. */
export type SchemaVersionLabel = "v1" | "v2";
