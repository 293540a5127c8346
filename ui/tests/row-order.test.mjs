// Rows keep their places while the pointer is over the list (issue 21, item 8): a report that
// re-sorts them (a row turning Ready drops below the problems) does not move a row under the
// pointer; once the pointer leaves the list, the rows take the report's order. Real Chromium
// against the built window with the mock backend.

import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { windowSuite } from "./harness.mjs";

const MIXED = JSON.parse(readFileSync(new URL("../src/fixtures/mixed.json", import.meta.url), "utf8"));
const suite = windowSuite();
const order = (page) => page.$$eval("li[data-connector]", (els) => els.map((e) => e.dataset.connector));

test("a re-sort waits while the pointer is over the list and happens when it leaves", async () => {
  const page = await suite.open("fixture=mixed");
  await page.waitForSelector("li[data-connector]");
  const before = await order(page);
  assert.deepEqual(before, MIXED.connectors.map((c) => c.name));

  // The report moves the first row (a problem) to the end: it turned Ready.
  const next = structuredClone(MIXED);
  const first = next.connectors.shift();
  Object.assign(first, { state: "ready", label: "Ready", severity: 0, needs_attention: false, blocks_start: false, action: null, detail: "Ready." });
  next.connectors.push(first);
  next.need_attention -= 1;

  await page.hover(`li[data-connector="${before[1]}"]`);
  await page.evaluate((r) => window.__patchbayMock.emitStatus(r), next);
  assert.equal(await page.locator(`li[data-connector="${first.name}"]`).getAttribute("data-state"), "ready", "the row itself is new");
  assert.deepEqual(await order(page), before, "no row moved under the pointer");

  // Away from the list: the report's order.
  const box = await page.locator("li[data-connector]").first().boundingBox();
  await page.mouse.move(box.x + box.width / 2, 2);
  await page.waitForFunction((want) => [...document.querySelectorAll("li[data-connector]")].map((e) => e.dataset.connector).join() === want, next.connectors.map((c) => c.name).join());
  assert.deepEqual(page.errors, []);
  await page.context.close();
});
