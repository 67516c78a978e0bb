import { z } from "zod";

/** A bad configuration value; the message names the variable and what it must be. */
export class ConfigError extends Error {
  override readonly name = "ConfigError";
}

/** What the environment variable's row in docs/operations.md says. */
export interface EnvVarDoc {
  /** The default as people read it (`300000`, `empty (all)`, `unset: …`). */
  default: string;
  meaning: string;
}

/** One environment variable: its name, how it is read, and its documentation. */
export interface EnvVar<T> extends EnvVarDoc {
  readonly name: string;
  readonly schema: z.ZodType<T, string | undefined>;
}

type Reader<T> = (name: string) => z.ZodType<T, string | undefined>;

/** How a variable is read: the value kinds of the house. */
export const read = {
  /** An integer ≥ `min` (default 0); unset or empty is `def`. */
  int(def: number, min = 0): Reader<number> {
    const what =
      min === 0 ? "a non-negative integer" : min === 1 ? "a positive integer" : `an integer ≥ ${min}`;
    return (name) =>
      z
        .string()
        .optional()
        .transform((v, ctx) => {
          if (v === undefined || v.trim() === "") return def;
          const n = Number(v);
          if (Number.isInteger(n) && n >= min) return n;
          ctx.addIssue({ code: "custom", message: `${name} must be ${what}, got ${JSON.stringify(v)}` });
          return z.NEVER;
        });
  },
  /** A comma-separated list (blank items dropped); unset is empty. */
  list(): Reader<string[]> {
    return () =>
      z
        .string()
        .optional()
        .transform((v) =>
          (v ?? "")
            .split(",")
            .map((s) => s.trim())
            .filter((s) => s !== ""),
        );
  },
  /** A string; unset or empty is `def`. */
  string(def: string): Reader<string> {
    return () =>
      z
        .string()
        .optional()
        .transform((v) => (v === undefined || v === "" ? def : v));
  },
  /** A string, or undefined when unset or empty. */
  optional(): Reader<string | undefined> {
    return () =>
      z
        .string()
        .optional()
        .transform((v) => (v === "" ? undefined : v));
  },
  /** One of `values`; unset or empty is `def` (undefined: the variable is optional). */
  oneOf<const V extends string, const D extends V | undefined = V>(
    values: readonly V[],
    def: D,
  ): Reader<V | D> {
    return (name) =>
      z
        .string()
        .optional()
        .transform((v, ctx) => {
          if (v === undefined || v === "") return def;
          if ((values as readonly string[]).includes(v)) return v as V | D;
          ctx.addIssue({
            code: "custom",
            message: `${name} must be one of ${values.join(", ")}, got ${JSON.stringify(v)}`,
          });
          return z.NEVER;
        });
  },
  /** Read by `parse` (a value, or an error naming what it must be); unset or empty is `def`. */
  custom<T>(def: T, parse: (value: string, name: string) => { value: T } | { error: string }): Reader<T> {
    return (name) =>
      z
        .string()
        .optional()
        .transform((v, ctx) => {
          if (v === undefined || v.trim() === "") return def;
          const out = parse(v.trim(), name);
          if ("value" in out) return out.value;
          ctx.addIssue({ code: "custom", message: out.error });
          return z.NEVER;
        });
  },
};

/** Declares one variable. */
export function envVar<T>(name: string, reader: Reader<T>, doc: EnvVarDoc): EnvVar<T> {
  return { name, schema: reader(name), ...doc };
}

/** A component's environment: its variables, read and checked at once. */
export interface EnvSpec<T> {
  readonly vars: readonly EnvVar<unknown>[];
  /** Reads every variable; a bad value throws ConfigError naming it (all bad ones, in one message). */
  parse(env: NodeJS.ProcessEnv): T;
}

type Values<F extends Record<string, EnvVar<unknown>>> = {
  [K in keyof F]: F[K] extends EnvVar<infer T> ? T : never;
};

/**
 * The spec of a component's environment, keyed by the names its code uses. `check` sees the values
 * once each is valid on its own and says what is wrong across them (e.g. one timeout over another).
 */
export function envSpec<F extends Record<string, EnvVar<unknown>>>(
  fields: F,
  check?: (values: Values<F>) => string | undefined,
): EnvSpec<Values<F>> {
  const entries = Object.entries(fields);
  const schema = z.object(Object.fromEntries(entries.map(([, v]) => [v.name, v.schema])));
  return {
    vars: entries.map(([, v]) => v),
    parse(env) {
      const parsed = schema.safeParse(env);
      if (!parsed.success) {
        const lines = parsed.error.issues.map((i) => `${i.path.join(".") || "env"}: ${i.message}`);
        throw new ConfigError(`invalid configuration: ${lines.join("; ")}`);
      }
      const data = parsed.data as Record<string, unknown>;
      const values = Object.fromEntries(entries.map(([key, v]) => [key, data[v.name]])) as Values<F>;
      const problem = check?.(values);
      if (problem !== undefined) throw new ConfigError(`invalid configuration: ${problem}`);
      return values;
    },
  };
}
