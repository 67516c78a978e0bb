#!/usr/bin/env node
// The installed `geode` command: the compiled CLI, plain JavaScript (no TypeScript tooling at run
// time). In a checkout, `pnpm build` writes dist/; `pnpm geode …` runs the sources instead.
try {
  await import("../dist/main.js");
} catch (err) {
  if (err?.code === "ERR_MODULE_NOT_FOUND" && String(err.message).includes("/cli/dist/main.js")) {
    process.stderr.write(
      "geode: the CLI is not built yet; run `pnpm build` in the checkout (or `pnpm geode …`)\n",
    );
    process.exit(1);
  }
  throw err;
}
