// Every state the Connectors window shows, light and dark, into docs/screenshots/ (run by
// scripts/screenshots.sh, which builds the window first). The built window in Debian's chromium with
// the mock backend (src/mock.ts) and its fixtures, the window's CSP header, prefers-color-scheme
// emulated. Not a test (node --test skips this file name); it fails when a state it shoots cannot
// be reached or the page logs an error.
//
//   connector-<state>-{light,dark}.png  one row in each of the nine connector states (mixed fixture)
//   overview, first-run, gallery, custom-connector, found-in, add-to-client, gateway-clients, check, history,
//   paste-back, link-asks, catalog-error the window in that situation, 900 px wide
//
// Usage: node tests/screenshot-states.mjs [--dist=DIR] [--out=DIR] [--only=NAME,...]
// (--dist: a built window other than ui/dist/; --only: those shots, e.g. --only=overview,gallery)

import { mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { DIST, launch, openWindow, startServer } from "./harness.mjs";

const arg = (name) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const out = (arg("out") ?? fileURLToPath(new URL("../../docs/screenshots/", import.meta.url))).replace(/\/?$/, "/");
const only = arg("only")?.split(",");
const dist = (arg("dist") ?? DIST).replace(/\/?$/, "/");
mkdirSync(out, { recursive: true });

const WIDTH = 900;

/** The first run's gallery, open. */
async function openGallery(page) {
  await page.click(".empty [data-control=open-gallery]");
  await page.waitForSelector("#gallery:not([hidden])");
}
const STATES = [
  "ready",
  "needs_authorization",
  "token_expired",
  "needs_reauth",
  "missing_configuration",
  "unavailable",
  "secret_store_unreachable",
  "no_credential_required",
  "probe_failed",
];

/** Scrolls the window's list so that `selector` sits just below the header. */
async function scrollTo(page, selector) {
  await page.evaluate((sel) => {
    const scroller = document.querySelector(".scroller");
    const target = document.querySelector(sel);
    scroller.scrollTop += target.getBoundingClientRect().top - scroller.getBoundingClientRect().top - 14;
  }, selector);
}

/** The shots: name, fixture query, viewport height, and what to do before shooting. */
const SHOTS = [
  ...STATES.map((state) => ({
    name: `connector-${state.replaceAll("_", "-")}`,
    query: "fixture=mixed",
    height: 640,
    // The first row in that state, with a margin around it: small, and the state is what it shows.
    clip: `li[data-connector][data-state="${state}"]`,
  })),
  { name: "overview", query: "fixture=mixed", height: 640 },
  { name: "first-run", query: "fixture=first-run", height: 640 },
  { name: "gallery", query: "fixture=first-run", height: 640, prepare: openGallery },
  {
    name: "custom-connector",
    query: "fixture=first-run",
    height: 640,
    prepare: async (page) => {
      await openGallery(page);
      await page.click("[data-control=open-custom]");
      await page.fill("#custom-name", "postgres");
      await page.getByLabel("A command (local server)").check();
      await page.fill("#custom-command", "npx");
      await page.fill("#custom-args", "-y\n@modelcontextprotocol/server-postgres");
      await page.click("[data-control=custom-add-value]");
      await page.fill("[data-control=custom-value-name]", "DATABASE_URL");
      await page.fill("[data-control=custom-value-value]", "postgres://localhost/app");
    },
  },
  { name: "found-in", query: "fixture=found", height: 760 },
  {
    name: "add-to-client",
    query: "fixture=mixed",
    height: 640,
    prepare: async (page) => {
      await page.waitForSelector("#app[data-clients=loaded]");
      const row = page.locator('li[data-connector="linear"]');
      await row.locator("details[data-drawer=clients] summary").click();
      await row.locator("[data-control=via][value=gateway]").check();
      await row.locator("[data-control=add-client][data-client=vscode]").click();
      await row.locator(".notice--info").waitFor();
      await scrollTo(page, 'li[data-connector="linear"]');
    },
  },
  {
    name: "gateway-clients",
    query: "fixture=mixed",
    height: 640,
    prepare: async (page) => {
      await page.waitForSelector("#gateway-clients:not([hidden]) li[data-gateway-client]");
      await page.click('li[data-gateway-client="ci-runner"] [data-control=revoke]');
      await scrollTo(page, "#gateway-clients");
    },
  },
  {
    name: "check",
    query: "fixture=mixed",
    height: 860,
    prepare: async (page) => {
      const row = page.locator('li[data-connector="deepwiki"]');
      await row.locator("[data-control=test]").click();
      await row.locator("section.check summary").click();
      await page.locator('li[data-connector="dropbox"] details[data-drawer=health] summary').click();
      await scrollTo(page, 'li[data-connector="deepwiki"]');
    },
  },
  {
    name: "history",
    query: "fixture=mixed",
    height: 640,
    prepare: async (page) => {
      await page.locator('li[data-connector="dropbox"] details[data-drawer=refresh] summary').click();
      await scrollTo(page, 'li[data-connector="dropbox"]');
    },
  },
  {
    name: "paste-back",
    query: "fixture=mixed&start=paste_back",
    height: 640,
    prepare: async (page) => {
      await page.click('li[data-connector="notion"] [data-control=primary]');
      await page.locator('li[data-connector="notion"] .flow').waitFor();
      await scrollTo(page, 'li[data-connector="notion"]');
    },
  },
  {
    // A patchbay://authorize/NAME link: the row asks before any consent starts.
    name: "link-asks",
    query: "fixture=mixed&focus=notion&authorize=ask",
    height: 640,
    prepare: async (page) => {
      await page.locator('li[data-connector="notion"] [data-control=confirm-authorize]').waitFor();
      await scrollTo(page, 'li[data-connector="notion"]');
    },
  },
  { name: "catalog-error", query: "fixture=catalog-error", height: 640 },
];

const server = await startServer(dist);
const browser = await launch();
let written = 0;
try {
  for (const shot of SHOTS) {
    if (only && !only.includes(shot.name)) continue;
    for (const scheme of ["light", "dark"]) {
      const page = await openWindow(browser, server.url, shot.query, {
        colorScheme: scheme,
        viewport: { width: WIDTH, height: shot.height },
      });
      const dark = await page.evaluate(() => matchMedia("(prefers-color-scheme: dark)").matches);
      if (dark !== (scheme === "dark")) throw new Error(`${shot.name}: the page does not see ${scheme}`);
      if (shot.prepare) await shot.prepare(page);
      let clip;
      if (shot.clip) {
        await scrollTo(page, shot.clip);
        const box = await page.locator(shot.clip).first().boundingBox();
        if (!box) throw new Error(`${shot.name}: no ${shot.clip} in ${shot.query}`);
        const margin = 12;
        clip = {
          x: Math.max(0, box.x - margin),
          y: Math.max(0, box.y - margin),
          width: Math.min(WIDTH, box.width + 2 * margin),
          height: box.height + 2 * margin,
        };
      }
      // No hover effects in the picture.
      await page.mouse.move(0, 0);
      const file = `${out}${shot.name}-${scheme}.png`;
      await page.screenshot({ path: file, clip });
      if (page.errors.length) throw new Error(`${shot.name}: ${page.errors.join("\n")}`);
      await page.context.close();
      written += 1;
      console.log(`wrote ${file}`);
    }
  }
} finally {
  await browser.close();
  await server.close();
}
if (written === 0) throw new Error(`nothing matched --only=${only}`);
