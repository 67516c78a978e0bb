import { z } from "zod";
import { ApprovalReplySchema, ApprovalRequestSchema } from "./approval-request.js";
import { ErrorCode, ErrorKind, GeodeError } from "./errors.js";
import { HealthReplySchema } from "./health-reply.js";
import {
  DispatchOutcomeSchema,
  HandlerReplySchema,
  HookEnvelopeSchema,
  HookInvokeRequestSchema,
} from "./hook-envelope.js";
import { ToolExecuteReplySchema, ToolExecuteRequestSchema } from "./tool-execute.js";
import { ToolTerminalReplySchema, ToolTerminalRequestSchema } from "./tool-terminal.js";
import {
  VerifyFinalizeRequestSchema,
  VerifyReplySchema,
  VerifyResolveRequestSchema,
} from "./verify-request.js";
import { type Codec, replyCodec, requestCodec } from "./wire-codec.js";

/**
 * One request/reply leg of the wire: its subject, who answers it, and the one codec of each
 * direction. Every sender and every responder of the leg uses these codecs, so the leg is written
 * once; `docs/protocol.md` is generated from them.
 */
export interface WireLeg<Req, Rep, ReqIn = Req, RepIn = Rep> {
  /** The subject, with `{ns}` and the other parts in braces. */
  readonly subject: string;
  /** The queue group of the responders. */
  readonly queue: string;
  /** Who sends the request and who answers it, in a line. */
  readonly summary: string;
  readonly request: Codec<Req, ReqIn>;
  readonly reply: Codec<Rep, RepIn>;
}

/** `{ns}.hook.invoke.{HookName}`: invoke one public hook through the hook-dispatcher. */
export const HookInvokeLeg = {
  subject: "{ns}.hook.invoke.{HookName}",
  queue: "hook-dispatcher",
  summary: "a runtime or service invokes a public hook; the dispatcher replies with the composed outcome",
  request: requestCodec(HookInvokeRequestSchema),
  reply: replyCodec(DispatchOutcomeSchema, "malformed dispatch outcome from hook-dispatcher"),
} satisfies WireLeg<unknown, unknown, unknown, unknown>;

/**
 * `{ns}.hook.handler.{HookName}.{handler}`: the dispatcher delivers an envelope to one handler,
 * which replies with its decision. Build the envelope with `hookEnvelope()`. A handler SDK refuses
 * a decision that breaks the hook's rules with `invalidDecision(message)`.
 */
export const HookHandlerLeg = {
  subject: "{ns}.hook.handler.{HookName}.{handler}",
  queue: "{handler}",
  summary: "the dispatcher delivers an envelope to a registered handler; the handler replies with a decision",
  request: requestCodec(HookEnvelopeSchema),
  reply: replyCodec(HandlerReplySchema, "reply must be an object with a decision"),
} satisfies WireLeg<unknown, unknown, unknown, unknown>;

/** The error reply of a handler SDK for a decision it refused (audited as `InvalidDecision`). */
export function invalidDecision(message: string): GeodeError {
  return new GeodeError(ErrorCode.InvalidRequest, message, { details: { kind: ErrorKind.InvalidDecision } });
}

/** True for the error reply of a refused decision (see `invalidDecision`). */
export function isInvalidDecision(err: unknown): err is GeodeError {
  return err instanceof GeodeError && err.details["kind"] === ErrorKind.InvalidDecision;
}

/** `{ns}.tool.execute`: run one tool call through the tool-executor's boundary. */
export const ToolExecuteLeg = {
  subject: "{ns}.tool.execute",
  queue: "tool-executor",
  summary: "a runtime runs one tool call through the whole tool boundary; the reply is its outcome",
  request: requestCodec(ToolExecuteRequestSchema),
  reply: replyCodec(ToolExecuteReplySchema, "malformed reply from tool-executor"),
} satisfies WireLeg<unknown, unknown, unknown, unknown>;

/** `{ns}.tool.terminal.{tool}`: the tool-executor sends an approved call to a remote tool. */
export const ToolTerminalLeg = {
  subject: "{ns}.tool.terminal.{tool}",
  queue: "tool.{tool}",
  summary:
    "the tool-executor sends an approved call to the remote tool's provider; an error reply is an error result",
  request: requestCodec(ToolTerminalRequestSchema),
  reply: replyCodec(ToolTerminalReplySchema, "malformed reply from the tool terminal"),
} satisfies WireLeg<unknown, unknown, unknown, unknown>;

/** `{ns}.approval.request`: the tool-executor asks a human; the first reply wins. */
export const ApprovalLeg = {
  subject: "{ns}.approval.request",
  queue: "approvers",
  summary: "the tool-executor asks a human approver; no approver, no answer in time or a bad answer denies",
  request: requestCodec(ApprovalRequestSchema),
  reply: replyCodec(ApprovalReplySchema, "invalid approver reply"),
} satisfies WireLeg<unknown, unknown, unknown, unknown>;

/** `{ns}.verify.finalize`: verify one candidate answer of a root turn. */
export const VerifyFinalizeLeg = {
  subject: "{ns}.verify.finalize",
  queue: "verifier",
  summary: "a runtime asks the verifier whether to deliver a candidate answer",
  request: requestCodec(VerifyFinalizeRequestSchema),
  reply: replyCodec(VerifyReplySchema, "malformed reply from verifier"),
} satisfies WireLeg<unknown, unknown, unknown, unknown>;

/** `{ns}.verify.resolve`: the external owner delivers or revises a parked candidate. */
export const VerifyResolveLeg = {
  subject: "{ns}.verify.resolve",
  queue: "verifier",
  summary: "the external owner of a parked candidate delivers it or asks for a revision",
  request: requestCodec(VerifyResolveRequestSchema),
  reply: replyCodec(VerifyReplySchema, "malformed reply from verifier"),
} satisfies WireLeg<unknown, unknown, unknown, unknown>;

/** A health request: an empty body (or `{}`). */
const HealthRequestSchema = z.strictObject({});

/** `{ns}.health.{service}`: each service answers with its status. */
export const HealthLeg = {
  subject: "{ns}.health.{service}",
  queue: "(none: every replica answers; the first reply wins)",
  summary: "anyone asks a service how it is",
  request: requestCodec(HealthRequestSchema),
  reply: replyCodec(HealthReplySchema, "malformed health reply"),
} satisfies WireLeg<unknown, unknown, unknown, unknown>;

/** Every request/reply leg, in the order `docs/protocol.md` lists them. */
export const WIRE_LEGS = [
  HookInvokeLeg,
  HookHandlerLeg,
  ToolExecuteLeg,
  ToolTerminalLeg,
  ApprovalLeg,
  VerifyFinalizeLeg,
  VerifyResolveLeg,
  HealthLeg,
] as const;
