// Shared test plumbing: a tiny static server for ui/dist (with the window's CSP header) on a
// free 127.0.0.1 port, and Debian's chromium driven by playwright-core (no browser downloads).

import { createServer } from "node:http";
import { readFile, stat } from "node:fs/promises";
import { extname, join, normalize } from "node:path";
import { after, before } from "node:test";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

export const DIST = fileURLToPath(new URL("../dist/", import.meta.url));
export const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src ipc: http://ipc.localhost";

const TYPES = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json",
  ".svg": "image/svg+xml",
  ".png": "image/png",
};

export async function startServer(root = DIST) {
  const server = createServer(async (req, res) => {
    try {
      const url = new URL(req.url ?? "/", "http://127.0.0.1");
      let path = normalize(decodeURIComponent(url.pathname)).replace(/^([/\\])+/, "");
      if (path === "" || path.endsWith("/")) path += "index.html";
      const file = join(root, path);
      if (!file.startsWith(root)) throw new Error("outside root");
      await stat(file);
      const body = await readFile(file);
      res.writeHead(200, {
        "content-type": TYPES[extname(file)] ?? "application/octet-stream",
        "content-security-policy": CSP,
        "cache-control": "no-store",
      });
      res.end(body);
    } catch {
      res.writeHead(404, { "content-type": "text/plain" });
      res.end("not found");
    }
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  return { url: `http://127.0.0.1:${port}/`, close: () => new Promise((r) => server.close(r)) };
}

export const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";

export async function launch() {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}

/**
 * Opens the built window with a fixture. Collects console messages and page errors in
 * `page.messages` / `page.errors`.
 */
export async function openWindow(browser, baseUrl, query = "fixture=mixed", opts = {}) {
  const context = await browser.newContext({
    viewport: opts.viewport ?? { width: 900, height: 640 },
    colorScheme: opts.colorScheme ?? "light",
    reducedMotion: opts.reducedMotion ?? "reduce",
    deviceScaleFactor: opts.deviceScaleFactor ?? 1,
  });
  const page = await context.newPage();
  const messages = [];
  const errors = [];
  page.on("console", (m) => messages.push(`${m.type()}: ${m.text()}`));
  page.on("pageerror", (e) => errors.push(String(e)));
  await page.goto(`${baseUrl}?${query}`);
  if (opts.wait !== false) await page.waitForSelector(opts.waitFor ?? "#app:not([aria-busy])");
  return Object.assign(page, { messages, errors, context });
}

/**
 * One static server and one browser for a test file (node:test's before/after hooks, registered
 * here). `open(query, opts)` opens the window as openWindow does; a dialog the page raises is
 * dismissed and counted in `page.errors`, since no test expects one.
 */
export function windowSuite() {
  let server;
  let browser;
  before(async () => {
    server = await startServer();
    browser = await launch();
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });
  return {
    /** The static server's URL (an origin for permissions, a page of a test's own). */
    get url() {
      return server.url;
    },
    /** The browser, for a test that sets up its own context. */
    get browser() {
      return browser;
    },
    async open(query, opts) {
      const page = await openWindow(browser, server.url, query, opts);
      page.on("dialog", (d) => {
        page.errors.push(`unexpected dialog: ${d.type()} ${d.message()}`);
        void d.dismiss();
      });
      return page;
    },
  };
}

/** The arguments of each call of `cmd` the mock backend got, in order. */
export const mockCalls = (page, cmd) =>
  page.evaluate((c) => window.__patchbayMock.calls.filter((x) => x.cmd === c).map((x) => x.args), cmd);
