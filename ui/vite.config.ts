import { defineConfig } from "vite";

// Everything is bundled and loaded from 'self': the window runs under a strict CSP
// (no inline scripts or styles, no remote content).
export default defineConfig({
  base: "./",
  clearScreen: false,
  server: { host: "127.0.0.1", port: 5173, strictPort: true },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    target: ["es2021", "chrome105", "safari15"],
    assetsInlineLimit: 0,
    sourcemap: false,
  },
});
