// Authorizing has a state (issue 21, item 7): while the browser is awaited the row shows a
// spinner with "Open the page again" (the backend opens the pending flow's page), "Copy link"
// (that page's address) and Cancel (cancel_authorization: the flow ends, the receiver stops);
// a failed start says why and offers Retry. Real Chromium against the built window with the
// mock backend. The backend's side (cancel frees the receiver, a reopened page is the pending
// flow's) is tested in src-tauri/crates/core/tests/authorize.rs.

import { test } from "node:test";
import assert from "node:assert/strict";
import { windowSuite, mockCalls } from "./harness.mjs";

const suite = windowSuite();
const notion = (page) => page.locator('li[data-connector="notion"]');
const authorize = (page) => page.click('li[data-connector="notion"] [data-control=primary]');

test("waiting on the browser: spinner, open the page again, copy its link, cancel", async () => {
  const page = await suite.open("fixture=mixed");
  await page.context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: suite.url });
  await authorize(page);
  const notice = notion(page).locator(".notice--info");
  await notice.waitFor();
  assert.equal(await notice.locator(".spinner").count(), 1);
  assert.equal(await notice.getAttribute("aria-busy"), "true");
  const started = await page.evaluate(() => window.__patchbayMock.startedFlow("notion", "receiver"));

  await notice.getByRole("button", { name: "Copy link" }).click();
  await page.waitForFunction(() => document.querySelector('li[data-connector="notion"] .notice [data-control=copy-link]').textContent === "Copied");
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), started.authorize_url);

  await notice.getByRole("button", { name: "Open the page again" }).click();
  await page.waitForFunction(() => window.__patchbayMock.calls.some((c) => c.cmd === "reopen_authorization"));
  assert.deepEqual(await mockCalls(page, "reopen_authorization"), [{ name: "notion" }]);

  await notice.getByRole("button", { name: "Cancel" }).click();
  await page.waitForFunction(() => !document.querySelector('li[data-connector="notion"] .notice'));
  assert.deepEqual(await mockCalls(page, "cancel_authorization"), [{ name: "notion" }]);
  assert.equal(await page.evaluate(() => document.activeElement?.dataset.control), "primary");
  assert.deepEqual(page.errors, []);
  await page.context.close();
});

test("a page that cannot be opened again, or a start that failed, says why and offers Retry", async () => {
  const page = await suite.open("fixture=mixed");
  await authorize(page);
  await notion(page).locator(".notice--info").waitFor();
  await page.evaluate(() =>
    window.__patchbayMock.failNext("reopen_authorization", {
      kind: "not_pending",
      message: "no authorization of notion is pending (it expired or was finished); start it again",
    }),
  );
  await notion(page).getByRole("button", { name: "Open the page again" }).click();
  const err = notion(page).locator(".notice--error");
  await err.waitFor();
  assert.match(await err.textContent(), /no authorization of notion is pending/);

  await page.evaluate(() => window.__patchbayMock.calls.splice(0));
  await page.evaluate(() =>
    window.__patchbayMock.failNext("start_authorization", { kind: "oauth", message: "auth.example.com did not answer within 10 s" }),
  );
  await err.getByRole("button", { name: "Retry" }).click();
  await page.waitForFunction(() => /did not answer/.test(document.querySelector('li[data-connector="notion"] .notice--error')?.textContent ?? ""));
  await notion(page).locator(".notice--error").getByRole("button", { name: "Retry" }).click();
  await notion(page).locator(".notice--info .spinner").waitFor();
  assert.deepEqual(await mockCalls(page, "start_authorization"), [{ name: "notion" }, { name: "notion" }]);
  assert.deepEqual(page.errors, []);
  await page.context.close();
});
