export { type PostgresServer, startPostgresServer } from "./postgres-server.js";
export {
  GEODE_BIN,
  processAlive,
  REPO_ROOT,
  type SpawnedProcess,
  spawnProgram,
  spawnService,
  waitFor,
} from "./processes.js";
export { DEFAULT_DATABASE_URL, DEFAULT_NATS_URL } from "./reachability.js";
export { scriptedOutcome } from "./scripted-outcome.js";
export {
  cleanupNamespace,
  createTestEnv,
  type TestEnv,
  uniqueNamespace,
  useFixture,
  useTestEnv,
} from "./test-env.js";
