// Sign-in requests from the gateway's clients in the Connectors window (issue 20): each waiting
// consent is shown above the connectors with the client's name and what it asks; Allow or Deny
// calls answer_consent with the request's id and takes it off the list; a request answered in
// the browser goes when consents-changed says so; a failed answer says why and keeps the
// request. Real Chromium against the built window with the mock backend (mock.ts: `consents=`,
// `fail=answer_consent`, `emitConsents`). The gateway's side (the desk, the page following the
// window's answer in a real browser) is tested in tests/tests/gateway_oauth.rs.

import { test } from "node:test";
import assert from "node:assert/strict";
import { windowSuite, mockCalls } from "./harness.mjs";

const { open } = windowSuite();

const REGION = "#consent-requests";
const items = (page) =>
  page.locator(`${REGION} li[data-consent]`).evaluateAll((lis) =>
    lis.map((li) => ({ id: li.dataset.consent, text: li.querySelector(".consent__text").textContent })),
  );

test("nothing waits: the region is hidden and nothing is asked", async () => {
  const page = await open("fixture=mixed");
  await page.waitForSelector("#summary");
  assert.equal(await page.isHidden(REGION), true);
  assert.deepEqual(await mockCalls(page, "answer_consent"), []);
  assert.deepEqual(page.errors, []);
  await page.context.close();
});

test("each request shows who asks for what; Allow and Deny answer it by id", async () => {
  const page = await open("fixture=mixed&consents=Cursor,Python SDK e2e:notion");
  await page.waitForSelector(`${REGION} li[data-consent]`);
  assert.deepEqual(await items(page), [
    { id: "consent-1", text: "Cursor wants to use your connectors through Patchbay's gateway." },
    { id: "consent-2", text: "Python SDK e2e wants to use notion through Patchbay's gateway." },
  ]);
  // Above the connectors: the first thing in the window.
  assert.equal(await page.evaluate(() => document.getElementById("app").firstElementChild.id), "consent-requests");

  await page.getByRole("button", { name: "Allow Cursor" }).click();
  await page.waitForFunction(() => document.querySelectorAll("#consent-requests li").length === 1);
  assert.deepEqual(await mockCalls(page, "answer_consent"), [{ id: "consent-1", allow: true }]);
  assert.equal(await page.textContent("#announcer"), "Allowed Cursor");

  await page.getByRole("button", { name: "Deny Python SDK e2e" }).click();
  await page.waitForSelector(REGION, { state: "hidden" });
  assert.deepEqual((await mockCalls(page, "answer_consent")).at(-1), { id: "consent-2", allow: false });
  assert.equal(await page.textContent("#announcer"), "Denied Python SDK e2e");
  assert.deepEqual(page.errors, []);
  await page.context.close();
});

test("a request that comes, or is answered in the browser, follows consents-changed", async () => {
  const page = await open("fixture=mixed");
  await page.waitForSelector("#summary");
  await page.evaluate(() =>
    window.__patchbayMock.emitConsents([{ id: "r1", client_name: "VS Code", connector: null, waiting_secs: 0 }]),
  );
  await page.waitForSelector(`${REGION} li[data-consent="r1"]`);
  await page.evaluate(() => window.__patchbayMock.emitConsents([]));
  await page.waitForSelector(REGION, { state: "hidden" });
  assert.deepEqual(await mockCalls(page, "answer_consent"), []);
  await page.context.close();
});

test("an answer that fails says why and keeps the request", async () => {
  const page = await open("fixture=mixed&consents=Cursor&fail=answer_consent");
  await page.waitForSelector(`${REGION} li[data-consent]`);
  await page.getByRole("button", { name: "Allow Cursor" }).click();
  const problem = page.locator("#consent-problem");
  await problem.waitFor({ state: "visible" });
  assert.equal(
    await problem.textContent(),
    "Could not answer Cursor's request: Patchbay cannot draw a random number: getrandom failed",
  );
  await page.waitForFunction(() =>
    [...document.querySelectorAll("#consent-requests button")].every((b) => !b.disabled),
  );
  assert.equal((await items(page)).length, 1, "still waiting");
  await page.context.close();
});
