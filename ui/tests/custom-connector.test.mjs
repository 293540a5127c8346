// "Add custom connector" in the Connectors window (issue 21): a server the catalog lacks is added
// from the gallery with a URL or a command, its values in rows (a secret masked); an empty
// required field is refused at that field without a call; the backend's refusal ("url: …") is
// shown at the field it names, with what was typed kept; Check says what the server answered;
// Add lands the new row with its next step, and no typed secret stays in the page or the call's
// record. Real Chromium against the built window with the mock backend (mock.ts:
// add_custom_connector and probe_remote_url answer what a test scripts). The rules themselves
// (names, https, taken names, the vault) are the backend's: src-tauri/crates/core/tests/
// custom_connectors.rs and tests/tests/cli.rs.

import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { mockCalls, windowSuite } from "./harness.mjs";

const fixture = (name) => JSON.parse(readFileSync(new URL(`../src/fixtures/${name}.json`, import.meta.url), "utf8"));
const FIRST_RUN = fixture("first-run");
const MIXED = fixture("mixed");
const suite = windowSuite();
const focusedId = (page) => page.evaluate(() => document.activeElement?.id ?? null);

/** The first-run report with a custom `name` in use, Ready. */
function withCustom(name) {
  const r = structuredClone(FIRST_RUN);
  const c = structuredClone(MIXED.connectors.find((x) => x.name === "filesystem"));
  Object.assign(c, { name, title: name, origin: "user" });
  r.connectors = [c];
  return r;
}

async function openForm(page) {
  await page.click(".empty [data-control=open-gallery]");
  await page.waitForSelector("#gallery:not([hidden])");
  await page.getByRole("button", { name: "Add a custom connector…" }).click();
  await page.waitForSelector("#custom-form:not([hidden])");
}

test("a search that finds nothing points to the custom form, which opens on its name field", async () => {
  const page = await suite.open("fixture=first-run");
  await page.click(".empty [data-control=open-gallery]");
  await page.fill("#gallery-search", "postgres");
  assert.match(await page.textContent(".gallery__none"), /Add it as a custom connector/);
  assert.equal(await page.locator("#custom-form").isVisible(), false);
  const toggle = page.getByRole("button", { name: "Add a custom connector…" });
  await toggle.click();
  assert.equal(await toggle.getAttribute("aria-expanded"), "true");
  assert.equal(await focusedId(page), "custom-name");
  assert.deepEqual(page.errors, []);
  await page.context.close();
});

test("an empty required field is refused at that field, without a call", async () => {
  const page = await suite.open("fixture=first-run");
  await openForm(page);
  await page.click("[data-control=custom-submit]");
  assert.equal(await page.getAttribute("#custom-name", "aria-invalid"), "true");
  assert.equal(await focusedId(page), "custom-name");
  assert.match(await page.textContent("#custom-error"), /give the connector a name/);
  await page.fill("#custom-name", "acme");
  await page.click("[data-control=custom-submit]");
  assert.equal(await page.getAttribute("#custom-url", "aria-invalid"), "true");
  assert.equal(await page.getAttribute("#custom-name", "aria-invalid"), null, "the old mark is gone");
  assert.deepEqual(await mockCalls(page, "add_custom_connector"), []);
  await page.context.close();
});

test("a local server is added with its command, arguments and a secret, and lands Ready", async () => {
  const page = await suite.open("fixture=first-run");
  await openForm(page);
  await page.fill("#custom-name", "postgres");
  await page.getByLabel("A command (local server)").check();
  assert.equal(await page.locator("#custom-url").isVisible(), false);
  await page.fill("#custom-command", "npx");
  await page.fill("#custom-args", "-y\n@modelcontextprotocol/server-postgres\n");
  await page.getByRole("button", { name: "Add a value" }).click();
  await page.getByLabel("Name of value 1", { exact: true }).fill("DATABASE_URL");
  const value = page.getByLabel("Value 1", { exact: true });
  assert.equal(await value.getAttribute("type"), "password", "a value is secret by default");
  await value.fill("postgres://me:pw-typed-7731@db/app");

  await page.evaluate((r) => window.__patchbayMock.nextResult("add_custom_connector", r), withCustom("postgres"));
  await page.click("[data-control=custom-submit]");
  await page.waitForSelector('li[data-connector="postgres"]');
  assert.deepEqual(await mockCalls(page, "add_custom_connector"), [
    {
      name: "postgres",
      kind: "stdio",
      command: "npx",
      args: ["-y", "@modelcontextprotocol/server-postgres"],
      values: [{ name: "DATABASE_URL", secret: true, valueGiven: true }],
    },
  ]);
  assert.equal(await page.locator("#gallery").isVisible(), false, "the gallery closed on the new row");
  assert.match(await page.textContent('li[data-connector="postgres"]'), /is added and ready to use/);
  const left = await page.evaluate(() =>
    document.documentElement.outerHTML.includes("pw-typed-7731") ||
    [...document.querySelectorAll("input, textarea")].some((i) => i.value.includes("pw-typed-7731")),
  );
  assert.equal(left, false, "the typed secret is gone from the page, fields included");
  assert.deepEqual(page.errors, []);
  await page.context.close();
});

test("the backend's refusal is shown at the field it names, and Check says what the server answered", async () => {
  const page = await suite.open("fixture=first-run");
  await openForm(page);
  await page.fill("#custom-name", "acme");
  await page.fill("#custom-url", "http://mcp.acme.test/mcp");
  await page.evaluate(() =>
    window.__patchbayMock.failNext("add_custom_connector", { kind: "invalid_input", field: "url", message: "use https:// (plain http only for localhost)" }),
  );
  await page.click("[data-control=custom-submit]");
  await page.waitForSelector("#custom-url[aria-invalid=true]");
  assert.equal(await focusedId(page), "custom-url");
  assert.equal((await page.textContent("#custom-error")).trim(), "use https:// (plain http only for localhost)");
  assert.equal(await page.inputValue("#custom-name"), "acme", "what was typed is kept");

  await page.fill("#custom-url", "https://mcp.acme.test/mcp");
  await page.evaluate(() => window.__patchbayMock.nextResult("probe_remote_url", { kind: "oauth" }));
  await page.getByRole("button", { name: "Check whether it wants OAuth" }).click();
  await page.waitForFunction(() => document.querySelector("#custom-probe").dataset.found === "oauth");
  assert.match(await page.textContent("#custom-probe"), /asks for OAuth: once added, Authorize it/);
  assert.deepEqual(await mockCalls(page, "probe_remote_url"), [{ url: "https://mcp.acme.test/mcp" }]);
  assert.deepEqual(page.errors, []);
  await page.context.close();
});
