import type { ChildProcess } from "node:child_process";
import { type ServiceEntry, type ServiceProcess, spawnServiceProcess } from "./service-processes.js";

/** How a supervisor restarts a service that exits on its own. */
export interface RestartPolicy {
  /** Delay before the first restart; each further one doubles it. Default 500 ms. */
  baseDelayMs: number;
  /** The longest delay between restarts. Default 30 s. */
  maxDelayMs: number;
  /** A run at least this long counts as stable: the next crash starts again at the base delay. Default 30 s. */
  stableAfterMs: number;
  /** This many exits in a row without a stable run: the service is reported as crash-looping. Default 5. */
  crashLoopAfter: number;
}

const DEFAULT_RESTART_POLICY: RestartPolicy = {
  baseDelayMs: 500,
  maxDelayMs: 30_000,
  stableAfterMs: 30_000,
  crashLoopAfter: 5,
};

/** The delay before restart number `attempt` (1-based): base · 2^(attempt-1), capped. */
export function restartDelay(attempt: number, policy: RestartPolicy = DEFAULT_RESTART_POLICY): number {
  return Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.max(0, attempt - 1));
}

/** `running`; `restarting` while a restart waits; `crash-looping` once it kept crashing; `stopped`. */
export type SupervisedState = "running" | "restarting" | "crash-looping" | "stopped";

/** One unexpected exit and what the supervisor does about it. */
export interface RestartNotice {
  service: string;
  /** The exit code, or the signal name. */
  exit: number | string;
  /** How long the process had run. */
  uptimeMs: number;
  /** The restart about to happen, counted since the last stable run (1, 2, …). */
  attempt: number;
  delayMs: number;
  /** True from the `crashLoopAfter`-th exit in a row on. */
  crashLooping: boolean;
}

export interface SupervisorOptions {
  env: NodeJS.ProcessEnv;
  onLine: (service: string, line: string, stream: "stdout" | "stderr") => void;
  /** Called on every unexpected exit, before the restart is scheduled. */
  onRestart: (notice: RestartNotice) => void;
  /** Called when a restarted process is running again (spawned). */
  onRespawn?: (service: string, pid: number | undefined) => void;
  policy?: Partial<RestartPolicy>;
  /** The process group of its own (see `spawnServiceProcess`). */
  detached?: boolean;
}

/**
 * Keeps one service running. Until `supervise()`, an exit is only reported (`startupExit`: a
 * service that fails at start-up has a reason a restart would not fix). After it, a process that
 * exits while it is not being stopped is started again after a capped exponential backoff
 * (`restartDelay`). `stop()` ends the current process and any restart waiting.
 */
export class ServiceSupervisor {
  readonly name: string;
  private readonly policy: RestartPolicy;
  private current: ServiceProcess;
  private startedAt = Date.now();
  private stopping = false;
  private crashes = 0;
  private restartTimer: ReturnType<typeof setTimeout> | undefined;
  private lastNotice: RestartNotice | undefined;
  private restarts = 0;
  private supervising = false;
  private handledExit: ServiceProcess | undefined;
  private reportStartupExit: (exit: number | string) => void = () => undefined;
  /** Resolves when the first process exits before `supervise()` was called; else never. */
  readonly startupExit: Promise<number | string>;

  constructor(
    private readonly service: ServiceEntry,
    private readonly options: SupervisorOptions,
  ) {
    this.name = service.name;
    this.policy = { ...DEFAULT_RESTART_POLICY, ...options.policy };
    this.startupExit = new Promise((resolve) => {
      this.reportStartupExit = resolve;
    });
    this.current = this.spawn();
  }

  /** The process running now (or the last one, while a restart waits). */
  get process(): ServiceProcess {
    return this.current;
  }

  get child(): ChildProcess {
    return this.current.child;
  }

  /** Crash-looping lasts until a restarted process has run for `stableAfterMs`. */
  get state(): SupervisedState {
    if (this.stopping) return "stopped";
    const looping = this.crashes >= this.policy.crashLoopAfter;
    if (this.restartTimer !== undefined) return looping ? "crash-looping" : "restarting";
    return looping && Date.now() - this.startedAt < this.policy.stableAfterMs ? "crash-looping" : "running";
  }

  /** Restarts so far. */
  get restartCount(): number {
    return this.restarts;
  }

  /** The last unexpected exit, if any. */
  get lastExit(): RestartNotice | undefined {
    return this.lastNotice;
  }

  /** From now on, an unexpected exit is restarted (an exit already seen is restarted now). */
  supervise(): void {
    this.supervising = true;
    const { child, exited } = this.current;
    if (child.exitCode !== null || child.signalCode !== null)
      void exited.then((exit) => this.onExit(this.current, exit));
  }

  /** Stops supervising: cancels a waiting restart, signals the process and waits for its exit. */
  async stop(signal: NodeJS.Signals, graceMs: number): Promise<number | string> {
    this.stopping = true;
    if (this.restartTimer !== undefined) clearTimeout(this.restartTimer);
    const { child, exited } = this.current;
    if (child.exitCode !== null || child.signalCode !== null) return exited;
    child.kill(signal);
    const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
    const code = await exited;
    clearTimeout(timer);
    return code;
  }

  private spawn(): ServiceProcess {
    const proc = spawnServiceProcess(this.service, this.options.env, this.options.onLine, {
      detached: this.options.detached ?? false,
    });
    this.startedAt = Date.now();
    void proc.exited.then((exit) => this.onExit(proc, exit));
    return proc;
  }

  private onExit(proc: ServiceProcess, exit: number | string): void {
    if (this.stopping || proc !== this.current) return;
    if (!this.supervising) {
      this.reportStartupExit(exit);
      return;
    }
    if (this.handledExit === proc) return;
    this.handledExit = proc;
    const uptimeMs = Date.now() - this.startedAt;
    this.crashes = uptimeMs >= this.policy.stableAfterMs ? 1 : this.crashes + 1;
    const notice: RestartNotice = {
      service: this.name,
      exit,
      uptimeMs,
      attempt: this.crashes,
      delayMs: restartDelay(this.crashes, this.policy),
      crashLooping: this.crashes >= this.policy.crashLoopAfter,
    };
    this.lastNotice = notice;
    this.options.onRestart(notice);
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      if (this.stopping) return;
      this.restarts++;
      this.current = this.spawn();
      this.options.onRespawn?.(this.name, this.current.child.pid);
    }, notice.delayMs);
  }
}
