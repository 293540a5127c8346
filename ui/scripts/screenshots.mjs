// Renders docs/screenshot.png (light) and docs/screenshot-dark.png from the `mixed` fixture,
// docs/screenshot-history.png: the Dropbox row's refresh history drawer, open, and
// docs/screenshot-check.png: DeepWiki tested (it fell back to SSE: the Save offer) above the
// degraded Dropbox row with its health drawer open.
// Issue 11: docs/screenshot-first-run.png (a fresh install: no connector in use),
// docs/screenshot-gallery.png (Add connector over the whole shipped catalog) and
// docs/screenshot-found.png (connectors found in clients, adopted credentials, Manage with Patchbay).
// Issue 12: docs/screenshot-add-to-client.png (Linear's "Use in another client" menu open, through
// the gateway, after Add to VS Code; its "Switch Cursor to Patchbay") and
// docs/screenshot-gateway-clients.png (the Gateway clients section, one Revoke asking to confirm).
// Usage: npm run screenshots  (builds first). Options: --scale=2 for a HiDPI capture,
// --out=DIR to write somewhere else than docs/.

import { fileURLToPath } from "node:url";
import { launch, openWindow, startServer } from "../tests/harness.mjs";

const outArg = process.argv.find((a) => a.startsWith("--out="));
const docs = outArg ? outArg.slice("--out=".length).replace(/\/?$/, "/") : fileURLToPath(new URL("../../docs/", import.meta.url));
const scaleArg = process.argv.find((a) => a.startsWith("--scale="));
const deviceScaleFactor = scaleArg ? Number(scaleArg.split("=")[1]) : 1;

const server = await startServer();
const browser = await launch();
try {
  for (const [scheme, file, drawer, check] of [
    ["light", "screenshot.png", null, null],
    ["dark", "screenshot-dark.png", null, null],
    ["light", "screenshot-history.png", "dropbox", null],
    ["light", "screenshot-check.png", null, "deepwiki"],
  ]) {
    const page = await openWindow(browser, server.url, "fixture=mixed", {
      colorScheme: scheme,
      viewport: { width: 900, height: check ? 860 : 640 },
      deviceScaleFactor,
    });
    if (drawer) {
      const row = page.locator(`li[data-connector="${drawer}"]`);
      await row.locator("details[data-drawer=refresh] summary").click();
      // the row a little below the header, with the row above it for context
      await page.evaluate((name) => {
        const scroller = document.querySelector(".scroller");
        const li = document.querySelector(`li[data-connector="${name}"]`);
        const prev = li.previousElementSibling ?? li;
        scroller.scrollTop += prev.getBoundingClientRect().top - scroller.getBoundingClientRect().top - 14;
      }, drawer);
      await page.mouse.move(0, 0);
    }
    if (check) {
      const row = page.locator(`li[data-connector="${check}"]`);
      await row.locator("[data-control=test]").click();
      await row.locator("section.check summary").click();
      await page.locator('li[data-connector="dropbox"] details[data-drawer=health] summary').click();
      await page.evaluate((name) => {
        const scroller = document.querySelector(".scroller");
        const li = document.querySelector(`li[data-connector="${name}"]`);
        scroller.scrollTop += li.getBoundingClientRect().top - scroller.getBoundingClientRect().top - 14;
      }, check);
      await page.mouse.move(0, 0);
    }
    await page.screenshot({ path: docs + file });
    if (page.errors.length) throw new Error(page.errors.join("\n"));
    await page.context.close();
    console.log(`wrote ${docs}${file}`);
  }

  // Issue 11: the first run, the gallery, and what was found in the user's clients.
  for (const [file, fixture, prepare] of [
    ["screenshot-first-run.png", "first-run", null],
    [
      "screenshot-gallery.png",
      "first-run",
      async (page) => {
        await page.click(".empty [data-control=open-gallery]");
        await page.waitForSelector("#gallery:not([hidden])");
      },
    ],
    ["screenshot-found.png", "found", null],
  ]) {
    const page = await openWindow(browser, server.url, `fixture=${fixture}`, {
      viewport: { width: 900, height: fixture === "found" ? 760 : 640 },
      deviceScaleFactor,
    });
    if (prepare) await prepare(page);
    await page.mouse.move(0, 0);
    await page.screenshot({ path: docs + file });
    if (page.errors.length) throw new Error(page.errors.join("\n"));
    await page.context.close();
    console.log(`wrote ${docs}${file}`);
  }

  // Issue 12: Use in another client, Switch to Patchbay, and the gateway's clients.
  for (const [file, prepare] of [
    [
      "screenshot-add-to-client.png",
      async (page) => {
        const row = page.locator('li[data-connector="linear"]');
        await row.locator("details[data-drawer=clients] summary").click();
        await row.locator('[data-control=via][value=gateway]').check();
        await row.locator('[data-control=add-client][data-client=vscode]').click();
        await row.locator(".notice--info").waitFor();
        await page.evaluate(() => {
          const scroller = document.querySelector(".scroller");
          const li = document.querySelector('li[data-connector="linear"]');
          scroller.scrollTop += li.getBoundingClientRect().top - scroller.getBoundingClientRect().top - 14;
        });
      },
    ],
    [
      "screenshot-gateway-clients.png",
      async (page) => {
        await page.waitForSelector("#gateway-clients:not([hidden]) li[data-gateway-client]");
        await page.click('li[data-gateway-client="ci-runner"] [data-control=revoke]');
        await page.evaluate(() => {
          const scroller = document.querySelector(".scroller");
          const section = document.querySelector("#gateway-clients");
          scroller.scrollTop += section.getBoundingClientRect().top - scroller.getBoundingClientRect().top - 14;
        });
      },
    ],
  ]) {
    const page = await openWindow(browser, server.url, "fixture=mixed", { viewport: { width: 900, height: 640 }, deviceScaleFactor });
    await page.waitForSelector("#app[data-clients=loaded]");
    await prepare(page);
    await page.mouse.move(0, 0);
    await page.screenshot({ path: docs + file });
    if (page.errors.length) throw new Error(page.errors.join("\n"));
    await page.context.close();
    console.log(`wrote ${docs}${file}`);
  }
} finally {
  await browser.close();
  await server.close();
}
