// "Enter a client" in the Connectors window (issue 19, the spec's last resort of registration):
// when start_authorization rejects with kind `client_needed` (the provider offers no client
// metadata documents and no dynamic registration), the row asks for a client made at the
// provider, with the redirect URI to register and a Copy button; Save sends the id and the
// secret to enter_client once and follows the authorization it started; the secret is never in
// the window's state (a re-render keeps only what the field holds), an empty id is refused
// without a call, a refusal is said in the form, and Cancel or Escape close it. Real Chromium
// against the built window with the mock backend (mock.ts: `start=client_needed`). The core's
// side (the client kept in the vault and used, only for the issuer its start found) is tested
// in src-tauri/crates/core/tests/authorize.rs.

import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { windowSuite, mockCalls } from "./harness.mjs";

const MIXED = JSON.parse(readFileSync(new URL("../src/fixtures/mixed.json", import.meta.url), "utf8"));
const suite = windowSuite();
const row = (page) => page.locator('li[data-connector="notion"]');
const form = (page) => row(page).locator("[data-flow=client_entry]");
const authorize = (page) => page.click('li[data-connector="notion"] [data-control=primary]');
const focused = (page) => page.evaluate(() => document.activeElement?.dataset.control ?? null);

test("no way to register: the row asks for a client, keeps it and starts authorizing", async () => {
  const page = await suite.open("fixture=mixed&start=client_needed");
  await page.context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: suite.url });
  await authorize(page);
  await form(page).waitFor();
  assert.match(await form(page).textContent(), /https:\/\/auth\.example\.com offers no way to register Patchbay/);
  assert.equal(await form(page).locator(".linkline__url").textContent(), "http://127.0.0.1:3118/callback");
  await form(page).locator("[data-control=copy-link]").click();
  await page.waitForFunction(() => document.querySelector("[data-flow=client_entry] [data-control=copy-link]").textContent === "Copied");
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), "http://127.0.0.1:3118/callback");
  assert.equal(await row(page).locator(".notice--error").count(), 0, "asked, not failed");

  const id = page.getByLabel("Client id");
  const secret = page.getByLabel("Client secret (leave empty for a public client)");
  assert.equal(await secret.getAttribute("type"), "password");
  await id.fill("hand-made");
  await secret.fill("s3cret-value");

  // a status-changed that touches the row meanwhile keeps both fields
  const touched = structuredClone(MIXED);
  touched.connectors.find((c) => c.name === "notion").detail = "Still waiting.";
  await page.evaluate((r) => window.__patchbayMock.emitStatus(r), touched);
  assert.equal(await page.textContent('li[data-connector="notion"] .row__detail'), "Still waiting.");
  assert.equal(await id.inputValue(), "hand-made");
  assert.equal(await secret.inputValue(), "s3cret-value");

  await page.getByRole("button", { name: "Save and authorize" }).click();
  await row(page).locator(".notice--info").waitFor();
  assert.match(await row(page).locator(".notice--info").textContent(), /Finish in your browser/);
  assert.equal(await form(page).count(), 0);
  assert.deepEqual(await mockCalls(page, "enter_client"), [{ name: "notion", clientId: "hand-made", secretGiven: true }]);
  // The secret went to the backend only: nothing in the page holds it now.
  assert.equal(await page.evaluate(() => document.documentElement.outerHTML.includes("s3cret-value")), false);

  // Authorize again: the client is known now, no form.
  await page.evaluate(() => window.__patchbayMock.calls.splice(0));
  await authorize(page);
  await row(page).locator(".notice--info").waitFor();
  assert.equal(await form(page).count(), 0);
  assert.deepEqual(await mockCalls(page, "start_authorization"), [{ name: "notion" }]);
  assert.deepEqual(page.errors, []);
  await page.context.close();
});

test("an empty id is refused in the form, a refusal is said there, Escape and Cancel close it", async () => {
  const page = await suite.open("fixture=mixed&start=client_needed");
  await authorize(page);
  await form(page).waitFor();
  assert.equal(await focused(page), "client-id", "the id field has the focus");

  await page.keyboard.press("Enter");
  const err = form(page).locator(".flow__error");
  await err.waitFor();
  assert.match(await err.textContent(), /Enter the client id/);
  assert.equal(await page.getByLabel("Client id").getAttribute("aria-invalid"), "true");
  assert.deepEqual(await mockCalls(page, "enter_client"), []);

  await page.evaluate(() =>
    window.__patchbayMock.failNext("enter_client", { kind: "secret_store", message: "the keychain is locked" }),
  );
  await page.getByLabel("Client id").fill("public-one");
  await page.keyboard.press("Enter");
  await page.waitForFunction(() => /keychain is locked/.test(document.querySelector("[data-flow=client_entry] .flow__error")?.textContent ?? ""));
  assert.equal(await form(page).locator("[data-kind]").getAttribute("data-kind"), "secret_store");
  assert.equal(await page.getByLabel("Client id").inputValue(), "public-one");
  assert.equal(await focused(page), "client-id");

  await page.keyboard.press("Escape");
  assert.equal(await form(page).count(), 0);
  assert.equal(await focused(page), "primary");

  await page.keyboard.press("Enter");
  await form(page).waitFor();
  await page.getByRole("button", { name: "Cancel" }).click();
  assert.equal(await form(page).count(), 0);
  assert.deepEqual(page.errors, []);
  await page.context.close();
});
