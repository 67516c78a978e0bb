/**
 * How every `geode connect <agent> --write` ends when the agent will not run the hooks just
 * written (a folder it does not trust, hooks it has not trusted, hooks switched off): one wording
 * for every agent, on stderr, and exit 1, so a script never mistakes such a set-up for a working one.
 */
export function hooksNotRun(io: { err(s: string): void }, agent: string, why: string): 1 {
  io.err(`the hooks are written, but ${agent} will not run them: ${why}\n`);
  return 1;
}
