/**
 * CPU time from Linux's /proc, to tell a rate bound by CPU from one bound by waiting: the whole
 * machine's busy time (all processes: Postgres, nats-server, the benchmark, anyone else) and one
 * process's own. Undefined where /proc is not there.
 */
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { cpus } from "node:os";

const TICK_MS = 10; // USER_HZ is 100 on Linux

/** Busy and total CPU milliseconds of the machine since boot, summed over all cores. */
function machineTicks(): { busy: number; total: number } | undefined {
  try {
    const line = readFileSync("/proc/stat", "utf8").split("\n")[0]!;
    const v = line.trim().split(/\s+/).slice(1).map(Number);
    const idle = (v[3] ?? 0) + (v[4] ?? 0);
    const total = v.slice(0, 8).reduce((a, b) => a + b, 0);
    return { busy: (total - idle) * TICK_MS, total: total * TICK_MS };
  } catch {
    return undefined;
  }
}

/**
 * User + system CPU milliseconds in a `/proc/…/stat` file (a process's or a thread's), with
 * those of its children that ended when `children`. Undefined when it cannot be read.
 */
function statCpuMs(file: string, children = false): number | undefined {
  try {
    const stat = readFileSync(file, "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const own = Number(f[11]) + Number(f[12]);
    return (children ? own + Number(f[13]) + Number(f[14]) : own) * TICK_MS;
  } catch {
    return undefined;
  }
}

/** User + system CPU milliseconds of process `pid` so far. */
export function processCpuMs(pid: number): number | undefined {
  return statCpuMs(`/proc/${pid}/stat`);
}

/** User + system CPU milliseconds so far of thread `tid` of process `pid` (its main thread: `pid`). */
export function threadCpuMs(pid: number, tid: number = pid): number | undefined {
  return statCpuMs(`/proc/${pid}/task/${tid}/stat`);
}

/**
 * CPU milliseconds so far of every process named `name` (`/proc/<pid>/comm`: `postgres`,
 * `nats-server`), summed: each one's user + system time and that of its children that ended (a
 * Postgres backend that exits is counted in its postmaster's), so a sum taken before and after a
 * phase covers processes that came and went within it. Undefined where /proc is not there.
 */
export function processesCpuMs(name: string): number | undefined {
  let pids: string[];
  try {
    pids = readdirSync("/proc").filter((d) => /^\d+$/.test(d));
  } catch {
    return undefined;
  }
  let ms = 0;
  for (const pid of pids) {
    try {
      if (readFileSync(`/proc/${pid}/comm`, "utf8").trim() !== name) continue;
    } catch {
      continue; // gone meanwhile
    }
    ms += statCpuMs(`/proc/${pid}/stat`, true) ?? 0;
  }
  return ms;
}

/** Starts a span; `end()` gives how busy the machine's cores were over it (1 = every core). */
export function machineBusy(): { end(): { busyCores: number; cores: number } | undefined } {
  const start = machineTicks();
  return {
    end() {
      const now = machineTicks();
      if (!start || !now || now.total === start.total) return undefined;
      const cores = cpus().length;
      return { busyCores: ((now.busy - start.busy) / (now.total - start.total)) * cores, cores };
    },
  };
}

/** One process of a tree: its parent and its user + system CPU milliseconds so far. */
export interface TreeProcess {
  ppid: number;
  cpuMs: number;
}

/**
 * Every live process under `root` (itself included), each with its parent and its CPU so far (its
 * own and that of its children that ended): take one before and one after a phase, and the
 * difference per process is what each of them spent on it. Empty where /proc is not there.
 */
export function processTree(root: number = process.pid): Map<number, TreeProcess> {
  const all = new Map<number, TreeProcess>();
  let pids: string[];
  try {
    pids = readdirSync("/proc").filter((d) => /^\d+$/.test(d));
  } catch {
    return all;
  }
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      const cpuMs = (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) * TICK_MS;
      all.set(Number(pid), { ppid: Number(f[1]), cpuMs });
    } catch {
      // gone meanwhile
    }
  }
  const tree = new Map<number, TreeProcess>();
  const under = (pid: number): boolean => {
    for (let at: number | undefined = pid, hops = 0; at !== undefined && hops < 64; hops++) {
      if (at === root) return true;
      at = all.get(at)?.ppid;
    }
    return false;
  };
  for (const [pid, p] of all) if (under(pid)) tree.set(pid, p);
  return tree;
}

/**
 * The process listening on TCP `port` on this machine (the NATS server of `NATS_URL`, say, among
 * other servers of the same name), from /proc/net/tcp and each process's sockets. Undefined when
 * none is found or /proc is not there.
 */
export function listenerPid(port: number): number | undefined {
  const inodes = new Set<string>();
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text: string;
    try {
      text = readFileSync(table, "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const f = line.trim().split(/\s+/);
      // local_address is ADDR:PORT in hex; st 0A is LISTEN; the inode is the tenth field.
      if (f[3] === "0A" && Number.parseInt(f[1]?.split(":")[1] ?? "", 16) === port && f[9]) inodes.add(f[9]);
    }
  }
  if (inodes.size === 0) return undefined;
  let pids: string[];
  try {
    pids = readdirSync("/proc").filter((d) => /^\d+$/.test(d));
  } catch {
    return undefined;
  }
  for (const pid of pids) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
        if (m && inodes.has(m[1]!)) return Number(pid);
      } catch {
        // closed meanwhile
      }
    }
  }
  return undefined;
}

/**
 * CPU microseconds process `pid` has run so far, at nanosecond precision: the sum of its threads'
 * on-CPU time in `/proc/<pid>/task/<tid>/schedstat` (threads that ended are not counted; a Node
 * service keeps its threads). Falls back to `/proc/<pid>/stat`'s 10 ms ticks; undefined when
 * neither can be read.
 */
export function processCpuUs(pid: number): number | undefined {
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return undefined;
  }
  let ns = 0;
  let read = 0;
  for (const tid of tids) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ")[0]);
      read++;
    } catch {
      // a thread that ended meanwhile, or no schedstat on this kernel (below)
    }
  }
  if (read > 0) return ns / 1000;
  const ms = processCpuMs(pid);
  return ms === undefined ? undefined : ms * 1000;
}

/**
 * Per-call CPU of a set of processes over a phase: `start()` before the calls, `end(calls)` after,
 * adding each named process's CPU microseconds per call to its sum; `perCall(name)` is the total
 * over every phase measured divided by their calls, `spread(name)` the lowest and highest phase.
 */
export class CpuPerCall {
  private readonly totals = new Map<string, number>();
  private readonly phases = new Map<string, number[]>();
  private calls = 0;
  constructor(private readonly pids: ReadonlyMap<string, number>) {}
  start(): { end(calls: number): void } {
    const at = new Map([...this.pids].map(([name, pid]) => [name, processCpuUs(pid)]));
    return {
      end: (calls: number) => {
        this.calls += calls;
        for (const [name, pid] of this.pids) {
          const before = at.get(name);
          const now = processCpuUs(pid);
          if (before === undefined || now === undefined) continue;
          this.totals.set(name, (this.totals.get(name) ?? 0) + (now - before));
          this.phases.set(name, [...(this.phases.get(name) ?? []), (now - before) / calls]);
        }
      },
    };
  }
  perCall(name: string): number {
    return (this.totals.get(name) ?? Number.NaN) / this.calls;
  }
  spread(name: string): [number, number] {
    const p = this.phases.get(name) ?? [];
    return [Math.min(...p), Math.max(...p)];
  }
}
