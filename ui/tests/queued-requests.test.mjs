// Row requests sent to a window whose page did not listen yet (a plain launch opened it and a
// patchbay://authorize link came moments later; the tray's "Authorize …" while it was loading):
// the backend keeps them and page_listening hands them over, which the page calls once, right
// after registering its listeners. Each is applied as its event would have been. Real Chromium
// against the built window with the mock backend (mock.ts: `queued=REQUEST:NAME,...` is what
// page_listening answers; it refuses a call made before the page's listeners exist). The
// backend's queue is tested in patchbay-core (tray_model.rs, PageRequests).

import { test } from "node:test";
import assert from "node:assert/strict";
import { mockCalls, windowSuite } from "./harness.mjs";

const { open } = windowSuite();

const calls = mockCalls;
const focusedRow = (page) =>
  page.evaluate(() => document.activeElement?.closest("li[data-connector]")?.dataset.connector ?? null);
const order = (page) => page.evaluate(() => window.__patchbayMock.calls.map((x) => x.cmd));

test("a queued ask shows the row's question; consent starts only from its button", async () => {
  const page = await open("fixture=mixed&start=paste_back&queued=ask_to_authorize:notion");
  const confirm = page.locator('li[data-connector="notion"] [data-control="confirm-authorize"]');
  await confirm.waitFor();
  assert.match(
    await page.textContent('li[data-connector="notion"] .notice--info'),
    /A link asked to authorize .*Continue only if you opened it yourself/,
  );
  assert.deepEqual(await calls(page, "start_authorization"), []);
  await confirm.click();
  await page.locator('li[data-connector="notion"] .flow').waitFor();
  assert.deepEqual(await calls(page, "start_authorization"), [{ name: "notion" }]);
  // Asked once, before the first status: the listeners were there (the mock refuses otherwise).
  assert.deepEqual(await calls(page, "page_listening"), [{}]);
  const cmds = await order(page);
  assert.ok(cmds.indexOf("page_listening") < cmds.indexOf("get_status"), cmds.join(", "));
  assert.deepEqual(page.errors, []);
  await page.context.close();
});

test("a queued authorize starts at once, as the tray's item does", async () => {
  const page = await open("fixture=mixed&start=paste_back&queued=authorize:notion");
  await page.locator('li[data-connector="notion"] .flow').waitFor();
  assert.deepEqual(await calls(page, "start_authorization"), [{ name: "notion" }]);
  assert.deepEqual(await calls(page, "page_listening"), [{}]);
  assert.deepEqual(page.errors, []);
  await page.context.close();
});

test("a queued focus lands on its row, after a request the URL carried", async () => {
  // The window was created to ask about notion; a focus on slack came before the page listened:
  // the page ends on slack, and nothing asks about slack (the URL's ask was for another row).
  const page = await open("fixture=mixed&focus=notion&authorize=ask&queued=focus:slack", {
    viewport: { width: 900, height: 420 },
  });
  await page.waitForFunction(() =>
    document.activeElement?.closest("li[data-connector]")?.dataset.connector === "slack");
  assert.equal(await focusedRow(page), "slack");
  assert.match(await page.locator('li[data-connector="slack"]').getAttribute("class"), /row--highlight/);
  assert.equal(await page.locator('[data-control="confirm-authorize"]').count(), 0);
  assert.deepEqual(await calls(page, "start_authorization"), []);
  // Status pushed and rows re-rendered: still the one call.
  await page.evaluate(() => window.__patchbayMock.emitStatus(window.__patchbayMock.report));
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => r())));
  assert.deepEqual(await calls(page, "page_listening"), [{}]);
  assert.deepEqual(page.errors, []);
  await page.context.close();
});

test("with nothing queued the page still says it listens, once, and later requests are events", async () => {
  const page = await open("fixture=mixed&start=paste_back");
  assert.deepEqual(await calls(page, "page_listening"), [{}]);
  await page.evaluate(() => window.__patchbayMock.askAuthorizeConnector("notion"));
  await page.locator('li[data-connector="notion"] [data-control="confirm-authorize"]').waitFor();
  assert.deepEqual(await calls(page, "page_listening"), [{}]);
  assert.deepEqual(page.errors, []);
  await page.context.close();
});
