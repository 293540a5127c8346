// Renders docs/screenshot.png (light) and docs/screenshot-dark.png from the `mixed` fixture.
// Usage: npm run screenshots  (builds first). Options: --scale=2 for a HiDPI capture.

import { fileURLToPath } from "node:url";
import { launch, openWindow, startServer } from "../tests/harness.mjs";

const docs = fileURLToPath(new URL("../../docs/", import.meta.url));
const scaleArg = process.argv.find((a) => a.startsWith("--scale="));
const deviceScaleFactor = scaleArg ? Number(scaleArg.split("=")[1]) : 1;

const server = await startServer();
const browser = await launch();
try {
  for (const [scheme, file] of [
    ["light", "screenshot.png"],
    ["dark", "screenshot-dark.png"],
  ]) {
    const page = await openWindow(browser, server.url, "fixture=mixed", {
      colorScheme: scheme,
      viewport: { width: 900, height: 640 },
      deviceScaleFactor,
    });
    await page.screenshot({ path: docs + file });
    if (page.errors.length) throw new Error(page.errors.join("\n"));
    await page.context.close();
    console.log(`wrote docs/${file}`);
  }
} finally {
  await browser.close();
  await server.close();
}
