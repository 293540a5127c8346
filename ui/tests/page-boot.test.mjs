// A new page is created with the status the tray shows and the health board
// (window.__patchbayBoot, src-tauri/src/window.rs): it draws its rows from them at once, before
// its first commands answer, and asks for both again once it listens. A row request the URL
// carries still waits for the listeners, and comes before the requests kept meanwhile. Real
// Chromium against the built window with the mock backend (mock.ts: `boot=1` creates the page as
// the app does; `hold=CMD` keeps that command's answers until `release(CMD)`).

import { test } from "node:test";
import assert from "node:assert/strict";
import { mockCalls, windowSuite } from "./harness.mjs";

const { open } = windowSuite();

const calls = mockCalls;
const rowNames = (page) =>
  page.$$eval("li[data-connector]", (rows) => rows.map((r) => r.dataset.connector));
const reportNames = (page) => page.evaluate(() => window.__patchbayMock.report.connectors.map((c) => c.name));

test("with a boot, the rows and health lines are drawn before get_status answers", async () => {
  const page = await open("fixture=mixed&boot=1&hold=get_status,get_health_board");
  // Drawn (the harness waited for aria-busy to go) while both commands are still held.
  assert.deepEqual(await calls(page, "get_status"), [{}]);
  const names = await rowNames(page);
  assert.equal(names.length, (await reportNames(page)).length);
  assert.ok(names.length > 3, names.join(", "));
  assert.ok((await page.locator(".drawer.health").count()) > 0, "the boot's board gave no health lines");
  assert.equal(await page.evaluate(() => window.__patchbayBoot), undefined, "the boot was left on window");

  // The answers come: the page draws what changed (here: a connector gone).
  await page.evaluate(() => {
    const m = window.__patchbayMock;
    m.report = { ...m.report, connectors: m.report.connectors.slice(1) };
    m.release("get_health_board");
    m.release("get_status");
  });
  await page.waitForFunction((n) => document.querySelectorAll("li[data-connector]").length === n, names.length - 1);
  assert.deepEqual(page.errors, []);
  await page.context.close();
});

test("without a boot, nothing is drawn until get_status answers", async () => {
  const page = await open("fixture=mixed&hold=get_status", { wait: false });
  await page.waitForFunction(() => window.__patchbayMock?.calls.some((c) => c.cmd === "get_status"));
  assert.equal(await page.getAttribute("#app", "aria-busy"), "true");
  assert.deepEqual(await rowNames(page), []);
  await page.evaluate(() => window.__patchbayMock.release("get_status"));
  await page.waitForSelector("#app:not([aria-busy])");
  assert.equal((await rowNames(page)).length, (await reportNames(page)).length);
  assert.deepEqual(page.errors, []);
  await page.context.close();
});

test("a URL's authorize waits for the page to listen, even with the rows drawn from the boot", async () => {
  const page = await open("fixture=mixed&boot=1&start=paste_back&focus=notion&authorize=1&hold=page_listening");
  assert.ok((await rowNames(page)).includes("notion"));
  assert.deepEqual(await calls(page, "page_listening"), [{}]);
  assert.deepEqual(await calls(page, "start_authorization"), [], "authorizing started before the page listened");
  await page.evaluate(() => window.__patchbayMock.release("page_listening"));
  await page.locator('li[data-connector="notion"] .flow').waitFor();
  assert.deepEqual(await calls(page, "start_authorization"), [{ name: "notion" }]);
  assert.deepEqual(page.errors, []);
  await page.context.close();
});

test("with a boot, the URL's request comes before those kept while the page loaded", async () => {
  // Created to ask about notion; a focus on slack came before the page listened: it ends on
  // slack, with no question about slack (as without a boot: queued-requests.test.mjs).
  const page = await open("fixture=mixed&boot=1&focus=notion&authorize=ask&queued=focus:slack", {
    viewport: { width: 900, height: 420 },
  });
  await page.waitForFunction(() =>
    document.activeElement?.closest("li[data-connector]")?.dataset.connector === "slack");
  assert.equal(await page.locator('li[data-connector="slack"] [data-control="confirm-authorize"]').count(), 0);
  assert.deepEqual(await calls(page, "start_authorization"), []);
  assert.deepEqual(page.errors, []);
  await page.context.close();
});
