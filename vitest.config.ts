import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

// The workspace packages resolve to their TypeScript sources ("geode-source" in their exports);
// compiled code (dist/) is what the services and the `geode` bin that tests start run. Other
// packages resolve as Node resolves them: no bundlers' "module" condition, whose builds (e.g. the
// OpenTelemetry API's) are not all loadable by Node.
const conditions = ["geode-source", "node", "development|production"];

export default defineConfig({
  resolve: { conditions },
  ssr: { resolve: { conditions } },
  test: {
    include: ["packages/*/src/**/*.test.ts", "services/*/src/**/*.test.ts", "test/**/*.test.ts"],
    globalSetup: ["packages/testing/src/global-setup.ts"],
    // Two cores: two files at a time. Each file owns a unique namespace, so files never share state.
    maxWorkers: 2,
    // What the CLI starts in-process (geode demo, geode up) runs compiled, as the global set-up
    // has just built it: the code users run, and far quicker to start than tsx on two cores.
    // `geode up` records each running plane in the user's runtime folder: the tests' go here, so a
    // test never finds (or leaves) a record among the user's own.
    env: {
      GEODE_FROM_SOURCE: "0",
      XDG_RUNTIME_DIR: fileURLToPath(new URL(".geode/test-runtime", import.meta.url)),
    },
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // The JSON report feeds the one-line summary that .ci/run prints after the run.
    reporters: ["default", "json"],
    outputFile: { json: ".geode/test-report.json" },
  },
});
