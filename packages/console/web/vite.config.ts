import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

// The console page: plain TypeScript, no framework; built into packages/console/dist/web (tsc writes the server beside it, in dist).
export default defineConfig({
  root: fileURLToPath(new URL(".", import.meta.url)),
  base: "/",
  logLevel: "warn",
  build: {
    outDir: fileURLToPath(new URL("../dist/web", import.meta.url)),
    emptyOutDir: true,
    target: "es2022",
    // No inline scripts or styles: the page's Content-Security-Policy allows 'self' only.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
  },
});
