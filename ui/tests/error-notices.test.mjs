// Every error in one human sentence (issue 21, item 7): a message that reads as machine text (a
// path, an OS or resolver error, or just long) is said as its kind's sentence, with the message
// itself under a closed "Details" disclosure; a plain message is said as it is. Both a form's
// error (a key's save) and a row's notice (the gallery's Add) go through format.ts humanError.
// Real Chromium against the built window with the mock backend.

import { test } from "node:test";
import assert from "node:assert/strict";
import { windowSuite } from "./harness.mjs";

const suite = windowSuite();
const RAW = "Secret Service: org.freedesktop.DBus.Error.ServiceUnknown (os error 2) at /run/user/1000/bus";

test("a technical key-save error is one sentence, the raw text under Details", async () => {
  const page = await suite.open("fixture=mixed");
  const field = page.getByLabel("Value of GITHUB_PAT");
  await page.evaluate((message) => window.__patchbayMock.failNext("set_connector_key", { kind: "secret_store", message }), RAW);
  await field.fill("ghp_x");
  await page.keyboard.press("Enter");
  const err = page.locator('li[data-variable="GITHUB_PAT"] .key__error');
  await err.waitFor();
  assert.equal(await err.locator(".notice__text").textContent(), "The system keychain did not answer.");
  const more = err.locator("details.notice__more");
  assert.equal(await more.getAttribute("open"), null, "the detail starts closed");
  assert.equal(await more.locator(".notice__detail").isVisible(), false);
  await more.locator("summary").click();
  assert.equal(await more.locator(".notice__detail").textContent(), RAW);

  // A plain message is said as it is, without Details.
  await page.evaluate(() => window.__patchbayMock.failNext("set_connector_key", { kind: "secret_store", message: "the keychain is locked" }));
  await field.press("Enter");
  await page.waitForFunction(() => /keychain is locked/.test(document.querySelector('li[data-variable="GITHUB_PAT"] .key__error')?.textContent ?? ""));
  assert.equal(await err.locator("details").count(), 0);
  assert.deepEqual(page.errors, []);
  await page.context.close();
});

test("a row's error notice says the catalog could not be saved, the path under Details", async () => {
  const page = await suite.open("fixture=first-run&fail=enable_connector");
  await page.click(".empty [data-control=open-gallery]");
  await page.locator('li[data-gallery="notion"] [data-control=enable]').click();
  const notice = page.locator('li[data-gallery="notion"] [role=alert]');
  await notice.waitFor();
  assert.equal(await notice.locator(".notice__text").textContent(), "Patchbay could not save your catalog.");
  await notice.locator("details.notice__more summary").click();
  assert.match(await notice.locator(".notice__detail").textContent(), /^cannot write \/home\/me\/.config\/patchbay\/mcp.json: Permission denied/);
  assert.deepEqual(page.errors, []);
  await page.context.close();
});
