// A connector's keys in the Connectors window (issue 21): every `${VAR}` its entry uses is listed
// with where its value comes from (never the value); a missing key has a masked field whose Save
// sends it once to set_connector_key and renders the answer; a stored key can be replaced or,
// after a confirmation, cleared; an empty field is refused without a call and a refusal is said
// at the key; what is typed survives a re-render and is gone from the page once sent. Real
// Chromium against the built window with the mock backend (mock.ts: set_connector_key and
// clear_connector_key answer what a test scripts). The backend's side (only a variable the
// connector uses, the same vault as the CLI, Missing configuration to Ready) is tested in
// src-tauri/crates/core/tests/connector_keys.rs, and through the real window in
// tests/tests/window_webdriver.rs.

import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { windowSuite, mockCalls } from "./harness.mjs";

const MIXED = JSON.parse(readFileSync(new URL("../src/fixtures/mixed.json", import.meta.url), "utf8"));
const suite = windowSuite();
const key = (page, row, name) => page.locator(`li[data-connector="${row}"] li[data-variable="${name}"]`);
const focused = (page) => page.evaluate(() => document.activeElement?.dataset.control ?? null);

/** The mixed report with `name`'s variable `variable` stored and the row Ready. */
function stored(name, variable) {
  const r = structuredClone(MIXED);
  const c = r.connectors.find((x) => x.name === name);
  Object.assign(c, { state: "ready", label: "Ready", severity: 0, needs_attention: false, blocks_start: false, action: null, detail: "Ready.", missing_variables: [] });
  c.variables = c.variables.map((v) => (v.name === variable ? { ...v, source: "vault" } : v));
  r.need_attention -= 1;
  return r;
}

test("each variable says where its value comes from; a default is not listed", async () => {
  const page = await suite.open("fixture=mixed");
  await page.waitForSelector("li[data-connector]");
  assert.match(await key(page, "github", "GITHUB_PAT").textContent(), /^GITHUB_PAT Not set in headers\.Authorization/);
  assert.match(await key(page, "linear", "LINEAR_API_KEY").textContent(), /^LINEAR_API_KEY Stored in the keychain/);
  assert.equal(await page.locator('li[data-connector="filesystem"] .keys').count(), 0, "FS_ROOT uses its default");
  assert.equal(await key(page, "github", "GITHUB_PAT").locator("input").getAttribute("type"), "password");
  assert.equal(await key(page, "linear", "LINEAR_API_KEY").locator("input").count(), 0, "a stored value has no field until Replace");
  assert.deepEqual(page.errors, []);
  await page.context.close();
});

test("a missing key is saved from its masked field and the row follows the answer", async () => {
  const page = await suite.open("fixture=mixed");
  const field = page.getByLabel("Value of GITHUB_PAT");
  await field.fill("ghp_typed_value");

  // a status-changed that touches the row meanwhile keeps what was typed
  const touched = structuredClone(MIXED);
  touched.connectors.find((c) => c.name === "github").detail = "Still missing.";
  await page.evaluate((r) => window.__patchbayMock.emitStatus(r), touched);
  assert.equal(await page.textContent('li[data-connector="github"] .row__detail'), "Still missing.");
  assert.equal(await field.inputValue(), "ghp_typed_value");

  await page.evaluate((r) => window.__patchbayMock.nextResult("set_connector_key", r), stored("github", "GITHUB_PAT"));
  await page.getByRole("button", { name: "Save GITHUB_PAT" }).click();
  await page.waitForFunction(() => document.querySelector('li[data-connector="github"]').dataset.state === "ready");
  assert.deepEqual(await mockCalls(page, "set_connector_key"), [{ name: "github", variable: "GITHUB_PAT", valueGiven: true }]);
  assert.match(await key(page, "github", "GITHUB_PAT").textContent(), /Stored in the keychain/);
  assert.equal(await page.evaluate(() => document.documentElement.outerHTML.includes("ghp_typed_value")), false);
  assert.equal(await page.evaluate(() => [...document.querySelectorAll("input")].some((i) => i.value === "ghp_typed_value")), false);
  await page.waitForFunction(() => /GITHUB_PAT stored in the keychain; GitHub is Ready/.test(document.getElementById("announcer").textContent));
  assert.deepEqual(page.errors, []);
  await page.context.close();
});

test("an empty field is refused without a call; a refusal is said at the key and keeps the field", async () => {
  const page = await suite.open("fixture=mixed");
  const field = page.getByLabel("Value of GITHUB_PAT");
  await field.focus();
  await page.keyboard.press("Enter");
  const err = key(page, "github", "GITHUB_PAT").locator(".key__error");
  await err.waitFor();
  assert.match(await err.textContent(), /Paste the value of GITHUB_PAT first/);
  assert.deepEqual(await mockCalls(page, "set_connector_key"), []);
  assert.equal(await focused(page), "key-value");

  await page.evaluate(() => window.__patchbayMock.failNext("set_connector_key", { kind: "secret_store", message: "the keychain is locked" }));
  await field.fill("ghp_x");
  await page.keyboard.press("Enter");
  await page.waitForFunction(() => /keychain is locked/.test(document.querySelector('li[data-variable="GITHUB_PAT"] .key__error')?.textContent ?? ""));
  assert.equal(await err.locator("[data-kind]").getAttribute("data-kind"), "secret_store");
  assert.equal(await field.getAttribute("aria-invalid"), "true");
  assert.equal(await field.inputValue(), "ghp_x", "kept to try again");
  assert.equal(await page.locator('li[data-connector="github"]').getAttribute("data-state"), "missing_configuration");
  await page.context.close();
});

test("a stored key: Replace opens a field (Escape closes it), Clear asks first, Keep keeps it", async () => {
  const page = await suite.open("fixture=mixed");
  const linear = key(page, "linear", "LINEAR_API_KEY");
  await page.getByRole("button", { name: "Replace LINEAR_API_KEY" }).click();
  const field = page.getByLabel("Value of LINEAR_API_KEY");
  await field.waitFor();
  assert.equal(await focused(page), "key-value");
  await page.keyboard.press("Escape");
  assert.equal(await linear.locator("input").count(), 0);
  assert.equal(await focused(page), "replace-key");

  await page.getByRole("button", { name: "Replace LINEAR_API_KEY" }).click();
  await field.fill("lin_new");
  await page.getByRole("button", { name: "Save LINEAR_API_KEY" }).click();
  await page.waitForFunction(() => !document.querySelector('li[data-variable="LINEAR_API_KEY"] input'));
  assert.deepEqual(await mockCalls(page, "set_connector_key"), [{ name: "linear", variable: "LINEAR_API_KEY", valueGiven: true }]);

  await page.getByRole("button", { name: "Clear LINEAR_API_KEY" }).click();
  assert.equal(await focused(page), "confirm-clear-key");
  assert.deepEqual(await mockCalls(page, "clear_connector_key"), [], "asked first");
  await page.getByRole("button", { name: "Keep" }).click();
  assert.equal(await focused(page), "clear-key");
  assert.deepEqual(await mockCalls(page, "clear_connector_key"), []);

  const cleared = structuredClone(MIXED);
  const c = cleared.connectors.find((x) => x.name === "linear");
  Object.assign(c, { state: "missing_configuration", label: "Missing configuration", action: "set_variable", needs_attention: true, missing_variables: [{ name: "LINEAR_API_KEY", field: "headers.Authorization" }] });
  c.variables = [{ name: "LINEAR_API_KEY", field: "headers.Authorization", source: "missing" }];
  await page.evaluate((r) => window.__patchbayMock.nextResult("clear_connector_key", r), cleared);
  await page.getByRole("button", { name: "Clear LINEAR_API_KEY" }).click();
  await page.getByRole("button", { name: "Confirm: clear LINEAR_API_KEY from the keychain" }).click();
  await page.waitForFunction(() => document.querySelector('li[data-connector="linear"]').dataset.state === "missing_configuration");
  assert.deepEqual(await mockCalls(page, "clear_connector_key"), [{ name: "linear", variable: "LINEAR_API_KEY" }]);
  assert.equal(await focused(page), "key-value", "the field now waiting has the focus");
  assert.deepEqual(page.errors, []);
  await page.context.close();
});
