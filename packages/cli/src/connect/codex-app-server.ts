import { spawn } from "node:child_process";

/** One hook as Codex itself lists it (`hooks/list` of `codex app-server`). */
interface CodexListedHook {
  key: string;
  eventName: string;
  command: string | null;
  sourcePath: string;
  isManaged: boolean;
  currentHash: string;
  /** `trusted`, `managed`, `untrusted`, `modified`, … */
  trustStatus: string;
}

export interface CodexHookListing {
  hooks: CodexListedHook[];
  /** What Codex could not read in its config (a config it cannot read, it drops). */
  errors: string[];
}

interface RpcReply {
  id?: number;
  result?: unknown;
  error?: { message?: string };
}

/**
 * Asks Codex which hooks it will run, and with what trust: `codex app-server` (JSON-RPC over its
 * stdio), `initialize` then `hooks/list`, in `cwd` with this environment (its `HOME` and
 * `CODEX_HOME` say which config it reads). Codex computes each hook's hash itself, so trust is
 * recorded exactly as Codex records it. Rejects when Codex cannot be started or does not answer.
 */
export function listCodexHooks(options: {
  codex: string;
  cwd: string;
  env: NodeJS.ProcessEnv;
  timeoutMs?: number;
}): Promise<CodexHookListing> {
  const child = spawn(options.codex, ["app-server"], {
    cwd: options.cwd,
    env: options.env,
    stdio: ["pipe", "pipe", "ignore"],
  });
  const pending = new Map<number, (reply: RpcReply) => void>();
  let buffered = "";
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (chunk: string) => {
    buffered += chunk;
    for (let nl = buffered.indexOf("\n"); nl >= 0; nl = buffered.indexOf("\n")) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      let reply: RpcReply;
      try {
        reply = JSON.parse(line) as RpcReply;
      } catch {
        continue;
      }
      if (reply.id !== undefined) pending.get(reply.id)?.(reply);
    }
  });
  let next = 0;
  const call = (method: string, params: unknown) =>
    new Promise<RpcReply>((resolve) => {
      const id = ++next;
      pending.set(id, resolve);
      child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", id, method, params })}\n`);
    });
  const work = (async () => {
    await call("initialize", { clientInfo: { name: "geode-connect", version: "1" } });
    child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", method: "initialized" })}\n`);
    const listed = await call("hooks/list", {});
    if (listed.error) throw new Error(`codex app-server: ${listed.error.message ?? "hooks/list failed"}`);
    return listingOf(listed.result, options.cwd);
  })();
  const failed = new Promise<never>((_, reject) => {
    child.once("error", (err) =>
      reject(new Error(`codex could not be started (${options.codex}): ${err.message}`)),
    );
    child.once("exit", (code) => reject(new Error(`codex app-server exited (${code}) before answering`)));
  });
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error("codex app-server did not answer in time")),
      options.timeoutMs ?? 30_000,
    );
  });
  return Promise.race([work, failed, late]).finally(() => {
    clearTimeout(timer);
    child.kill();
  });
}

/** The listing of `cwd` in a `hooks/list` result (`{data: [{cwd, hooks, errors}]}`). */
function listingOf(result: unknown, cwd: string): CodexHookListing {
  const data = ((result as { data?: unknown[] } | undefined)?.data ?? []) as Array<{
    cwd?: string;
    hooks?: CodexListedHook[];
    errors?: unknown[];
  }>;
  const entry = data.find((d) => d.cwd === cwd) ?? data[0];
  return {
    hooks: entry?.hooks ?? [],
    errors: (entry?.errors ?? []).map((e) => (typeof e === "string" ? e : JSON.stringify(e))),
  };
}
