export {
  ConfigError,
  type EnvSpec,
  type EnvVar,
  type EnvVarDoc,
  envSpec,
  envVar,
  read,
} from "./env-spec.js";
