import type { GeodeConnection } from "@geode/bus";
import {
  type AttributedDecision,
  type Correlation,
  type CorrelationInput,
  type DispatchOutcome,
  correlation as fillCorrelation,
  type GeodeError,
  HookName,
  RuntimeEvent,
} from "@geode/contracts";
import { type HookResult, invokeLifecycleHook, type LifecycleDeps } from "@geode/lifecycle";
import { type LifecycleOptions, lifecycleDeps } from "./lifecycle.js";

export interface CompactionRequest {
  model: string;
  provider: string;
  message_count: number;
  keep_recent: number;
  /** Why compaction runs (`auto`, `manual`, `overflow`, …). */
  trigger: string;
  /** A hard compaction must happen (the context no longer fits): PreCompact cannot defer it. */
  hard: boolean;
  correlation?: CorrelationInput;
}

/** What the caller's compaction function is asked to do. */
export interface CompactionPlan {
  message_count: number;
  /** Messages to keep verbatim (a PreCompact `rewrite` may change it). */
  keep_recent: number;
  trigger: string;
  hard: boolean;
}

export interface CompactionSteps<S> {
  /** Compacts in memory and returns the new state and its message count. */
  compact(plan: CompactionPlan): Promise<{ state: S; new_message_count: number }>;
  /** Stores the compacted state durably; PostCompact runs only after this resolves. */
  store(state: S): Promise<void>;
}

export type CompactionResult<S> =
  | {
      status: "deferred";
      /** The deferring handler's reason. */
      reason: string;
      pre: DispatchOutcome | null;
      hookError?: GeodeError;
    }
  | {
      status: "compacted";
      plan: CompactionPlan;
      state: S;
      new_message_count: number;
      /** `defer` decisions that a hard compaction overrode. */
      overridden: AttributedDecision[];
      pre: DispatchOutcome | null;
      post: DispatchOutcome | null;
      hookError?: GeodeError;
    };

export interface Compactor {
  /**
   * PreCompact, then the caller's `compact`, then its `store`, then PostCompact (`persisted: true`).
   * A `defer` decision postpones a soft compaction (nothing is called); a hard one goes ahead. A
   * `rewrite` may change only `keep_recent` (clamped to 0…message_count): the model, counts,
   * trigger and hardness are facts, not knobs. If `compact` or `store` throws, the error propagates
   * and PostCompact does not run. A PreCompact that cannot be invoked counts as no decision.
   */
  run<S>(request: CompactionRequest, steps: CompactionSteps<S>): Promise<CompactionResult<S>>;
}

export type CompactorOptions = LifecycleOptions;

export function createCompactor(conn: GeodeConnection, options: CompactorOptions = {}): Compactor {
  const lifecycle = lifecycleDeps(conn, options);
  return {
    async run(request, steps) {
      const deps = await lifecycle();
      const corr = fillCorrelation(request.correlation ?? {});
      const pre = await invokeLifecycleHook(
        deps,
        HookName.PreCompact,
        {
          model: request.model,
          provider: request.provider,
          message_count: request.message_count,
          keep_recent: request.keep_recent,
          trigger: request.trigger,
          hard: request.hard,
        },
        corr,
      );
      const defers = pre.outcome?.decisions.filter((d) => d.action === "defer") ?? [];
      const hookError = pre.hookError ? { hookError: pre.hookError } : {};
      if (defers.length > 0 && !request.hard) {
        const reason = defers[0]?.reason ?? "";
        await deps.events.emit(
          RuntimeEvent.CONTEXT_OVERFLOW_ACTION,
          {
            action: "compaction_deferred",
            trigger: request.trigger,
            hard: false,
            message_count: request.message_count,
          },
          corr,
        );
        return { status: "deferred", reason, pre: pre.outcome, ...hookError };
      }
      const plan = planOf(request, pre.outcome);
      const { state, new_message_count } = await steps.compact(plan);
      await steps.store(state);
      const post = await compacted(deps, request, plan.keep_recent, new_message_count, corr);
      const errors = pre.hookError ?? post.hookError;
      return {
        status: "compacted",
        plan,
        state,
        new_message_count,
        overridden: defers,
        pre: pre.outcome,
        post: post.outcome,
        ...(errors ? { hookError: errors } : {}),
      };
    },
  };
}

/** The plan: PreCompact may rewrite `keep_recent` (an integer, kept within the message count). */
function planOf(request: CompactionRequest, pre: DispatchOutcome | null): CompactionPlan {
  const rewritten = pre?.payload["keep_recent"];
  const keepRecent =
    typeof rewritten === "number" && Number.isInteger(rewritten)
      ? Math.min(Math.max(rewritten, 0), request.message_count)
      : request.keep_recent;
  return {
    message_count: request.message_count,
    keep_recent: keepRecent,
    trigger: request.trigger,
    hard: request.hard,
  };
}

/** After the compacted state is stored: PostCompact, then the `compacted` overflow action. */
async function compacted(
  deps: LifecycleDeps,
  request: CompactionRequest,
  keepRecent: number,
  newMessageCount: number,
  corr: Correlation,
): Promise<HookResult> {
  const post = await invokeLifecycleHook(
    deps,
    HookName.PostCompact,
    {
      model: request.model,
      provider: request.provider,
      original_message_count: request.message_count,
      new_message_count: newMessageCount,
      keep_recent: keepRecent,
      trigger: request.trigger,
      persisted: true,
    },
    corr,
  );
  await deps.events.emit(
    RuntimeEvent.CONTEXT_OVERFLOW_ACTION,
    {
      action: "compacted",
      trigger: request.trigger,
      hard: request.hard,
      original_message_count: request.message_count,
      new_message_count: newMessageCount,
      keep_recent: keepRecent,
    },
    corr,
  );
  return post;
}
