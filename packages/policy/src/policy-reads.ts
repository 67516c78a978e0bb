import * as cedar from "@cedar-policy/cedar-wasm/nodejs";
import type { CedarRequest } from "./policy-request.js";

/**
 * What a set of policies reads of a request: the context attributes it names (`all` when one
 * reads the context as a whole), and whether it needs the principal's or the resource's entity
 * (an `in` scope, or the variable anywhere in a condition). Cedar converts every attribute and
 * entity it is given before it evaluates anything, about half of its cost per call with the
 * shipped packs; what no policy can see changes no answer, so it is not sent.
 */
export interface PolicyReads {
  context: ReadonlySet<string> | "all";
  principal: boolean;
  resource: boolean;
}

type Node = unknown;

/** Whether a scope (`principal`/`resource` of the EST) needs the entity's ancestors. */
function scopeNeedsEntity(scope: Node): boolean {
  if (scope === null || typeof scope !== "object") return true;
  const op = (scope as { op?: unknown }).op;
  if (op === "All" || op === "==") return false;
  if (op === "is") return (scope as { in?: unknown }).in !== undefined;
  return true;
}

/** Adds what one policy's JSON form reads; unknown shapes read everything. */
function addReads(
  json: Record<string, unknown>,
  into: { context: Set<string> | "all"; principal: boolean; resource: boolean },
): void {
  if (scopeNeedsEntity(json["principal"])) into.principal = true;
  if (scopeNeedsEntity(json["resource"])) into.resource = true;
  const visit = (node: Node): void => {
    if (Array.isArray(node)) {
      for (const n of node) visit(n);
      return;
    }
    if (node === null || typeof node !== "object") return;
    const o = node as Record<string, unknown>;
    for (const op of [".", "has"]) {
      const access = o[op] as { left?: { Var?: unknown }; attr?: unknown } | undefined;
      if (access && typeof access === "object" && access.left?.Var === "context") {
        if (into.context !== "all" && typeof access.attr === "string") into.context.add(access.attr);
        else into.context = "all";
        return;
      }
    }
    if ("Var" in o) {
      if (o["Var"] === "context") into.context = "all";
      else if (o["Var"] === "principal") into.principal = true;
      else if (o["Var"] === "resource") into.resource = true;
      return;
    }
    for (const v of Object.values(o)) visit(v);
  };
  visit(json["conditions"]);
}

/** What the given policies (Cedar text each) read; everything when one cannot be read back. */
export function policyReads(policies: Iterable<string>): PolicyReads {
  const into: { context: Set<string> | "all"; principal: boolean; resource: boolean } = {
    context: new Set(),
    principal: false,
    resource: false,
  };
  for (const text of policies) {
    const parsed = cedar.policyToJson(text);
    if (parsed.type === "failure") return { context: "all", principal: true, resource: true };
    addReads(parsed.json as unknown as Record<string, unknown>, into);
  }
  return into;
}

/**
 * The request as Cedar needs it for policies that read `reads`: only those context attributes,
 * the principal's entity (with its groups as parents) and the resource's only when read. The
 * groups' own entities carry nothing (no attributes, no parents), so they are never sent: an `in`
 * reads the principal's parents.
 */
export function trimRequest(request: CedarRequest, reads: PolicyReads): CedarRequest {
  let context = request.context;
  if (reads.context !== "all") {
    context = {};
    for (const k of reads.context) if (Object.hasOwn(request.context, k)) context[k] = request.context[k];
  }
  const entities = request.entities.filter((e) =>
    e.uid === request.principal ? reads.principal : e.uid === request.resource ? reads.resource : false,
  );
  return { ...request, context, entities };
}
