// Browser tests of the Connectors window against the mock backend (fixtures in src/fixtures).
// Run with `npm test` (builds first). Uses Debian's chromium through playwright-core.

import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { mockCalls, windowSuite } from "./harness.mjs";

const fixture = (name) =>
  JSON.parse(readFileSync(new URL(`../src/fixtures/${name}.json`, import.meta.url), "utf8"));
const MIXED = fixture("mixed");
const HEALTH = fixture("health/mixed");

const STATES = {
  ready: "Ready",
  needs_authorization: "Needs authorization",
  token_expired: "Token expired",
  needs_reauth: "Needs re-auth",
  missing_configuration: "Missing configuration",
  unavailable: "Unavailable",
  secret_store_unreachable: "Secret store unreachable",
  no_credential_required: "No credential required",
  probe_failed: "Probe failed",
};

const suite = windowSuite();
const open = suite.open;

const rowNames = (page) => page.$$eval("li[data-connector]", (els) => els.map((e) => e.dataset.connector));
const focusedRow = (page) =>
  page.evaluate(() => document.activeElement?.closest("li[data-connector]")?.dataset.connector ?? null);
const focusedIsRow = (page) => page.evaluate(() => document.activeElement?.matches("li[data-connector]") ?? false);
const calls = mockCalls;

describe("rendering", () => {
  test("keeps the backend's order and counts attention in the header", async () => {
    const page = await open("fixture=mixed");
    assert.deepEqual(await rowNames(page), MIXED.connectors.map((c) => c.name));
    assert.equal(await page.textContent(".summary"), "6 need attention, listed first");
    assert.match(await page.textContent(".sources"), /\/usr\/share\/patchbay\/mcp\.json \(default, 9 entries\)/);
    assert.match(await page.textContent(".sources"), /\/home\/me\/\.config\/patchbay\/mcp\.json \(user, 3 entries\)/);
    // The catalog files are details, closed: the paths are not on show until asked for.
    assert.equal(await page.locator("details.sources").getAttribute("open"), null);
    assert.equal(await page.locator(".source__path").first().isVisible(), false);
    await page.click(".sources__summary");
    assert.equal(await page.locator(".source__path").first().isVisible(), true);
    assert.deepEqual(page.errors, []);
    await page.context.close();
  });

  test("renders every state's badge with its label and its own glyph", async () => {
    const page = await open("fixture=mixed");
    const glyphs = new Set();
    for (const [state, label] of Object.entries(STATES)) {
      const badge = page.locator(`li[data-state="${state}"] .badge--${state}`).first();
      assert.equal((await badge.textContent()).trim(), label, state);
      glyphs.add(await badge.locator("svg").innerHTML());
    }
    assert.equal(glyphs.size, 9, "each state has a distinct icon shape");
    await page.context.close();
  });

  test("shows the one-shot note on a ready row, and relative expiry times", async () => {
    const page = await open("fixture=mixed");
    const linear = page.locator('li[data-connector="linear"]');
    assert.equal(await linear.getAttribute("data-state"), "ready");
    assert.match(await linear.locator(".row__oneshot").textContent(), /cannot be renewed/);
    assert.match(await linear.locator(".row__meta").textContent(), /Token expires in 42 min/);
    assert.match(await page.locator('li[data-connector="figma"] .row__meta').textContent(), /expired 3 h ago/);
    assert.equal(await page.locator('li[data-connector="figma"] .row__oneshot').count(), 1);
    assert.equal(await page.locator('li[data-connector="notion"] .row__oneshot').count(), 0);
    // missing variables with their field, the unavailable reason
    assert.match(await page.locator('li[data-connector="github"] .key[data-variable=GITHUB_PAT]').textContent(), /GITHUB_PAT Not set in headers\.Authorization/);
    assert.match(await page.locator('li[data-connector="stripe"] .row__reason').textContent(), /retired this endpoint/);
    await page.context.close();
  });

  test("empty catalog, catalog file error, unreachable store and all-ready", async () => {
    let page = await open("fixture=empty");
    assert.equal(await page.locator("li[data-connector]").count(), 0);
    assert.equal(await page.textContent(".empty__title"), "No connectors in use yet");
    assert.equal(await page.textContent(".summary"), "No connectors in use");
    assert.equal(await page.locator(".unclaimed").isVisible(), false);
    await page.context.close();

    page = await open("fixture=catalog-error");
    const err = fixture("catalog-error").catalog.sources.find((s) => s.error);
    assert.equal(await page.textContent('[data-banner="catalog-error"] .banner__message'), err.error);
    assert.match(await page.textContent('[data-banner="catalog-error"] .banner__title'), /config\/patchbay\/mcp\.json/);
    // A client's config that could not be read is said too (status --json's client_errors).
    assert.equal(
      await page.textContent('[data-banner="client-config"] .banner__message'),
      fixture("catalog-error").client_errors[0],
    );
    await page.context.close();

    page = await open("fixture=store-unreachable");
    assert.match(await page.textContent('[data-banner="secret-store"]'), /org\.freedesktop\.secrets/);
    await page.context.close();

    page = await open("fixture=all-ready");
    assert.equal(await page.textContent(".summary"), "All 4 connectors ready");
    await page.context.close();
  });

  test("a rejected get_status shows kind and message with a Retry that recovers", async () => {
    const page = await open("fixture=mixed&fail=get_status");
    assert.match(await page.textContent(".error-box__message"), /Permission denied/);
    assert.equal(await page.textContent(".error-box__kind"), "secret_store");
    await page.click("text=Retry");
    await page.waitForSelector("li[data-connector]");
    assert.equal(await page.locator(".error-box").count(), 0);
    assert.equal((await calls(page, "get_status")).length, 2);
    await page.context.close();
  });
});

describe("actions", () => {
  test("Authorize only on needs_authorization / needs_reauth rows, invoking start_authorization", async () => {
    const page = await open("fixture=mixed");
    const withButton = await page.$$eval(".row__actions .btn--primary", (bs) =>
      bs.map((b) => [b.closest("li").dataset.state, b.textContent]),
    );
    assert.deepEqual(withButton.sort(), [
      ["needs_authorization", "Authorize"],
      ["needs_reauth", "Re-authorize"],
    ]);
    await page.click('li[data-connector="notion"] [data-control=primary]');
    await page.waitForSelector('li[data-connector="notion"] .notice--info');
    assert.deepEqual(await calls(page, "start_authorization"), [{ name: "notion" }]);
    await page.click('li[data-connector="figma"] [data-control=primary]');
    assert.deepEqual(await calls(page, "start_authorization"), [{ name: "notion" }, { name: "figma" }]);
    await page.context.close();
  });

  test("an authorization error shows inline on that row and can be dismissed", async () => {
    const page = await open("fixture=mixed");
    await page.evaluate(() =>
      window.__patchbayMock.failNext("start_authorization", {
        kind: "discovery_failed",
        message: "https://mcp.notion.com/.well-known/oauth-authorization-server returned 503",
      }),
    );
    await page.click('li[data-connector="notion"] [data-control=primary]');
    const notice = page.locator('li[data-connector="notion"] .notice--error');
    await notice.waitFor();
    assert.match(await notice.textContent(), /returned 503/);
    assert.equal(await notice.getAttribute("role"), "alert");
    assert.equal(await page.locator(".notice--error").count(), 1, "only on that row");
    await notice.locator("[data-control=dismiss]").click();
    assert.equal(await page.locator(".notice--error").count(), 0);
    assert.deepEqual(page.errors, []);
    await page.context.close();
  });

  test("the terminal's way stays one Copy away: `patchbay secret set NAME`", async () => {
    const page = await open("fixture=mixed");
    await page.context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: suite.url });
    assert.equal(await page.locator('li[data-connector="github"] [data-control=primary]').count(), 0, "the key's field is the action");
    const btn = page.locator('li[data-connector="github"] .keys__cli [data-control=copy-link]');
    assert.equal(await btn.textContent(), "Copy command");
    await btn.click();
    await page.waitForFunction(() =>
      document.querySelector('li[data-connector="github"] .keys__cli [data-control=copy-link]').textContent === "Copied",
    );
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), "patchbay secret set GITHUB_PAT");
    await page.context.close();
  });

  test("deleting an unclaimed credential takes two clicks and re-renders", async () => {
    const page = await open("fixture=mixed");
    const key = MIXED.unclaimed[0].credential_key;
    const row = page.locator(`li[data-unclaimed="${key}"]`);
    const btn = row.locator("[data-control=delete]");
    assert.equal(await btn.textContent(), "Delete");
    await btn.click();
    assert.equal(await btn.textContent(), "Confirm delete");
    assert.deepEqual(await calls(page, "delete_unclaimed_credential"), []);
    await btn.click();
    await row.waitFor({ state: "detached" });
    assert.deepEqual(await calls(page, "delete_unclaimed_credential"), [{ credentialKey: key }]);
    assert.equal(await page.locator("li[data-unclaimed]").count(), 1);
    assert.equal(await page.textContent(".section-count"), "1");
    // focus moved to the remaining row's button, not lost
    assert.equal(await page.evaluate(() => document.activeElement?.dataset.control), "delete");
    assert.deepEqual(page.errors, []);
    await page.context.close();
  });

  test("an unconfirmed delete reverts after a few seconds", async () => {
    const page = await open("fixture=mixed");
    const btn = page.locator("li[data-unclaimed] [data-control=delete]").first();
    await btn.click();
    assert.equal(await btn.textContent(), "Confirm delete");
    await page.waitForFunction(
      () => document.querySelector("li[data-unclaimed] [data-control=delete]").textContent === "Delete",
      null,
      { timeout: 6000 },
    );
    assert.deepEqual(await calls(page, "delete_unclaimed_credential"), []);
    await page.context.close();
  });
});

describe("runtime bridges", () => {
  const addButtons = (page) =>
    page.$$eval("[data-control=add-runtime]", (bs) =>
      bs.map((b) => [b.closest("li").dataset.connector, b.dataset.runtime, b.textContent]),
    );

  test("shows each row's bridges: written to the store, or not yet", async () => {
    const page = await open("fixture=mixed");
    const slack = page.locator('li[data-connector="slack"] .row__bridges li');
    assert.equal(await slack.count(), 1);
    assert.equal(await slack.textContent(), "Claude Code · slack ✓ in store");
    assert.equal(await slack.getAttribute("data-runtime"), "claude_code");
    assert.equal(
      await page.textContent('li[data-connector="figma"] .row__bridges li'),
      "Claude Code · figma-dev · not yet written",
    );
    assert.equal(await page.locator('li[data-connector="notion"] .row__bridges').count(), 0);
    await page.context.close();
  });

  test("says which runtime rotated the stored pair, and when", async () => {
    const page = await open("fixture=mixed");
    assert.equal(
      await page.textContent('li[data-connector="slack"] .row__rotated'),
      "Last rotated by Claude Code, 5 min ago",
    );
    assert.equal(await page.locator(".row__rotated").count(), 1, "only where a runtime rotated it");
    await page.context.close();
  });

  test("draws an Add to … button for each runtime the core lists in can_add_to", async () => {
    const page = await open("fixture=mixed");
    assert.deepEqual((await addButtons(page)).sort(), [
      ["asana", "claude_code", "Add to Claude Code"],
      ["linear", "claude_code", "Add to Claude Code"],
      ["notion", "claude_code", "Add to Claude Code"],
    ]);
    // Codex found: the core now lists it where it applies; the window follows the list.
    const next = structuredClone(MIXED);
    next.runtimes.find((r) => r.runtime === "codex").found = true;
    for (const c of next.connectors) {
      if (["figma", "notion", "slack"].includes(c.name)) c.can_add_to = [...c.can_add_to, "codex"];
    }
    await page.evaluate((r) => window.__patchbayMock.emitStatus(r), next);
    const withCodex = (await addButtons(page)).filter(([, runtime]) => runtime === "codex");
    assert.deepEqual(withCodex.map(([name]) => name).sort(), ["figma", "notion", "slack"]);
    assert.equal(
      await page.textContent('li[data-connector="slack"] [data-control=add-runtime][data-runtime=codex]'),
      "Add to Codex",
    );
    await page.context.close();
  });

  test("Add to Claude Code invokes add_to_runtime and shows the new bridge", async () => {
    const page = await open("fixture=mixed");
    await page.click('li[data-connector="notion"] [data-control=add-runtime][data-runtime=claude_code]');
    await page.waitForSelector('li[data-connector="notion"] .row__bridges li');
    assert.deepEqual(await calls(page, "add_to_runtime"), [{ name: "notion", runtime: "claude_code" }]);
    assert.equal(
      await page.textContent('li[data-connector="notion"] .row__bridges li'),
      "Claude Code · notion · not yet written",
    );
    assert.equal(await page.locator('li[data-connector="notion"] [data-control=add-runtime]').count(), 0);
    assert.deepEqual(page.errors, []);
    await page.context.close();
  });

  test("an add_to_runtime error shows inline on that row", async () => {
    const page = await open("fixture=mixed");
    await page.evaluate(() =>
      window.__patchbayMock.failNext("add_to_runtime", {
        kind: "conflict",
        message: "Claude Code already has a different server named notion (https://other/mcp); nothing was changed",
      }),
    );
    await page.click('li[data-connector="notion"] [data-control=add-runtime]');
    const notice = page.locator('li[data-connector="notion"] .notice--error');
    await notice.waitFor();
    assert.match(await notice.textContent(), /already has a different server named notion/);
    assert.equal(await notice.locator(".notice__text").getAttribute("data-kind"), "conflict");
    assert.equal(await page.locator(".notice--error").count(), 1, "only on that row");
    assert.equal(
      await page.textContent('li[data-connector="notion"] [data-control=add-runtime]'),
      "Add to Claude Code",
      "the button is back",
    );
    await page.context.close();
  });
});

describe("authorization flow", () => {
  const notionRow = (page) => page.locator('li[data-connector="notion"]');
  const clickAuthorize = (page, name = "notion") => page.click(`li[data-connector="${name}"] [data-control=primary]`);

  test("receiver: the row says to finish in the browser, with no panel", async () => {
    const page = await open("fixture=mixed");
    await clickAuthorize(page);
    const notice = notionRow(page).locator(".notice--info");
    await notice.waitFor();
    assert.match(await notice.textContent(), /Finish in your browser\. This row updates by itself/);
    assert.equal(await notice.getAttribute("role"), "status");
    assert.equal(await page.locator(".flow").count(), 0);
    assert.equal(await notice.locator(".linkline").count(), 0, "no link when the browser opened");
    assert.deepEqual(await calls(page, "start_authorization"), [{ name: "notion" }]);
    assert.deepEqual(page.errors, []);
    await page.context.close();
  });

  test("receiver with a notice (no browser): shows the notice and the link to copy", async () => {
    const page = await open("fixture=mixed");
    await page.context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: suite.url });
    const started = await page.evaluate(() => {
      const s = window.__patchbayMock.startedFlow("notion", "receiver");
      s.notice = "No browser could be opened: xdg-open is not installed";
      window.__patchbayMock.nextResult("start_authorization", s);
      return s;
    });
    await clickAuthorize(page);
    const notice = notionRow(page).locator(".notice--info");
    await notice.waitFor();
    assert.match(await notice.textContent(), /Finish in your browser/);
    assert.equal(await notice.locator(".notice__detail").textContent(), started.notice);
    assert.equal(await notice.locator(".linkline__url").textContent(), started.authorize_url);
    await notice.locator("[data-control=copy-link]").click();
    await page.waitForFunction(() => document.querySelector("[data-control=copy-link]").textContent === "Copied");
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), started.authorize_url);
    await page.context.close();
  });

  test("paste-back: the panel takes the pasted address, completes, and re-renders from the answer", async () => {
    const page = await open("fixture=mixed&start=paste_back");
    await page.context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: suite.url });
    await clickAuthorize(page);
    const panel = notionRow(page).locator(".flow");
    await panel.waitFor();
    const started = await page.evaluate(() => window.__patchbayMock.startedFlow("notion", "paste_back"));
    assert.match(await panel.locator(".flow__why").textContent(), /not Patchbay's receiver/);
    assert.equal(await panel.locator(".flow__notice").count(), 0);
    // the link is text to select or copy, never something the webview would navigate to
    assert.equal(await panel.locator(".linkline__url").textContent(), started.authorize_url);
    assert.equal(await page.locator("li[data-connector] a[href]").count(), 0);
    await panel.locator("[data-control=copy-link]").click();
    await page.waitForFunction(() => document.querySelector(".flow [data-control=copy-link]").textContent === "Copied");
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), started.authorize_url);

    // the labelled field has the focus after the panel opened (and again after Copy, by Tab)
    const field = page.getByLabel("Paste the address you landed on, or the code");
    assert.equal(await field.getAttribute("data-control"), "pasted");
    await field.focus();
    const pasted = "https://app.example.com/oauth/callback?code=c0de&state=st4te";
    await field.fill(pasted);

    // a status-changed that touches the row meanwhile keeps what was typed
    const touched = structuredClone(MIXED);
    touched.connectors.find((c) => c.name === "notion").detail = "Still waiting.";
    await page.evaluate((r) => window.__patchbayMock.emitStatus(r), touched);
    assert.equal(await page.textContent('li[data-connector="notion"] .row__detail'), "Still waiting.");
    assert.equal(await field.inputValue(), pasted);

    // the answer is what the window renders: notion ready with the backend's detail
    const answer = structuredClone(MIXED);
    const n = answer.connectors.find((c) => c.name === "notion");
    Object.assign(n, { state: "ready", label: "Ready", severity: 0, needs_attention: false, blocks_start: false, action: null, detail: "Authorized by paste." });
    answer.need_attention -= 1;
    await page.evaluate((r) => window.__patchbayMock.nextResult("complete_authorization", r), answer);
    await panel.locator("[data-control=complete]").click();
    await page.waitForFunction(() => document.querySelector('li[data-connector="notion"]').dataset.state === "ready");
    assert.deepEqual(await calls(page, "complete_authorization"), [{ name: "notion", pasted }]);
    assert.equal(await page.textContent('li[data-connector="notion"] .row__detail'), "Authorized by paste.");
    assert.equal(await page.locator(".flow").count(), 0);
    assert.equal(await page.textContent(".summary"), "5 need attention, listed first");
    assert.deepEqual(page.errors, []);
    await page.context.close();
  });

  test("paste-back: an error shows inline, keeps the text, and Escape closes the panel", async () => {
    const page = await open("fixture=mixed&start=paste_back");
    await clickAuthorize(page);
    const panel = notionRow(page).locator(".flow");
    await panel.waitFor();
    assert.equal(await page.evaluate(() => document.activeElement?.dataset.control), "pasted");
    await page.evaluate(() =>
      window.__patchbayMock.failNext("complete_authorization", {
        kind: "oauth",
        message: "the token endpoint refused the code: invalid_grant (code expired)",
      }),
    );
    // typed and submitted from the keyboard; arrow keys stay in the field
    await page.keyboard.type("c0de");
    await page.keyboard.press("ArrowLeft");
    assert.equal(await focusedRow(page), "notion");
    await page.keyboard.press("Enter");
    const err = panel.locator(".flow__error");
    await err.waitFor();
    assert.equal(await err.getAttribute("role"), "alert");
    assert.match(await err.textContent(), /invalid_grant \(code expired\)/);
    assert.equal(await err.locator("[data-kind]").getAttribute("data-kind"), "oauth");
    const field = panel.locator("[data-control=pasted]");
    assert.equal(await field.inputValue(), "c0de");
    assert.equal(await field.getAttribute("aria-invalid"), "true");
    assert.equal(await page.evaluate(() => document.activeElement?.dataset.control), "pasted");
    assert.deepEqual(await calls(page, "complete_authorization"), [{ name: "notion", pasted: "c0de" }]);
    assert.equal(await notionRow(page).getAttribute("data-state"), "needs_authorization");

    // an empty field is refused without a call
    await field.fill("");
    await page.keyboard.press("Enter");
    await page.waitForFunction(() => /Paste the address/.test(document.querySelector(".flow__error")?.textContent ?? ""));
    assert.equal((await calls(page, "complete_authorization")).length, 1);

    // Tab reaches Complete and Cancel; Escape closes and gives the focus back to Authorize
    await page.keyboard.press("Tab");
    assert.equal(await page.evaluate(() => document.activeElement?.dataset.control), "complete");
    await page.keyboard.press("Tab");
    assert.equal(await page.evaluate(() => document.activeElement?.dataset.control), "cancel");
    await page.keyboard.press("Escape");
    assert.equal(await page.locator(".flow").count(), 0);
    assert.equal(await page.evaluate(() => document.activeElement?.dataset.control), "primary");
    assert.equal(await focusedRow(page), "notion");

    // Cancel by keyboard as well
    await page.keyboard.press("Enter");
    await panel.waitFor();
    await page.keyboard.press("Tab");
    await page.keyboard.press("Tab");
    assert.equal(await page.evaluate(() => document.activeElement?.dataset.control), "cancel");
    await page.keyboard.press("Enter");
    assert.equal(await page.locator(".flow").count(), 0);
    assert.deepEqual(page.errors, []);
    await page.context.close();
  });

  test("paste-back because the port is taken: the notice says so", async () => {
    const page = await open("fixture=mixed&start=port_taken");
    await clickAuthorize(page, "figma");
    const panel = page.locator('li[data-connector="figma"] .flow');
    await panel.waitFor();
    assert.match(await panel.locator(".flow__notice").textContent(), /port 3118 on 127\.0\.0\.1 is in use by another program \(node, pid 4242\)/);
    assert.equal(await panel.locator(".flow__why").count(), 0, "the reason is not repeated");
    assert.deepEqual(await calls(page, "start_authorization"), [{ name: "figma" }]);
    await page.context.close();
  });

  test("the tray asks the window to authorize a row, and it starts", async () => {
    let page = await open("fixture=mixed", { viewport: { width: 900, height: 420 } });
    await page.evaluate(() => window.__patchbayMock.authorizeConnector("figma"));
    await page.locator('li[data-connector="figma"] .notice--info').waitFor();
    assert.deepEqual(await calls(page, "start_authorization"), [{ name: "figma" }]);
    assert.equal(await focusedRow(page), "figma");
    // a row with nothing to authorize only says so
    await page.evaluate(() => window.__patchbayMock.authorizeConnector("slack"));
    assert.match(await page.textContent('li[data-connector="slack"] .notice--info'), /does not need authorizing now/);
    // a name the catalog does not have: a banner, no call
    await page.evaluate(() => window.__patchbayMock.authorizeConnector("nope"));
    assert.match(await page.textContent('[data-banner="request-error"]'), /no connector named “nope”/);
    assert.equal((await calls(page, "start_authorization")).length, 1);
    await page.click('[data-banner="request-error"] button');
    assert.equal(await page.locator('[data-banner="request-error"]').count(), 0);
    await page.context.close();

    // a window opened for the request carries it in its URL
    page = await open("fixture=mixed&focus=notion&authorize=1&start=paste_back");
    await page.locator('li[data-connector="notion"] .flow').waitFor();
    assert.deepEqual(await calls(page, "start_authorization"), [{ name: "notion" }]);
    await page.context.close();
  });

  test("a patchbay:// link shows the row and asks; consent starts only from its button", async () => {
    let page = await open("fixture=mixed&start=paste_back");
    await page.evaluate(() => window.__patchbayMock.askAuthorizeConnector("notion"));
    const notice = page.locator('li[data-connector="notion"] .notice--info');
    await notice.waitFor();
    assert.match(await notice.textContent(), /A link asked to authorize .*Continue only if you opened it yourself/);
    const confirm = page.locator('li[data-connector="notion"] [data-control="confirm-authorize"]');
    assert.equal(await confirm.evaluate((e) => e === document.activeElement), true, "the question has the focus");
    // the row's own render is done: still nothing started
    assert.deepEqual(await calls(page, "start_authorization"), []);
    await confirm.click();
    await page.locator('li[data-connector="notion"] .flow').waitFor();
    assert.deepEqual(await calls(page, "start_authorization"), [{ name: "notion" }]);
    assert.equal(await notice.count(), 0, "the question is gone once answered");
    await page.context.close();

    // a window the link opened carries the question in its URL, and asks too
    page = await open("fixture=mixed&focus=notion&authorize=ask&start=paste_back");
    await page.locator('li[data-connector="notion"] [data-control="confirm-authorize"]').waitFor();
    assert.deepEqual(await calls(page, "start_authorization"), []);
    await page.context.close();
  });
});

describe("refresh history and credential actions", () => {
  const row = (page, name) => page.locator(`li[data-connector="${name}"]`);
  const drawer = (page, name) => row(page, name).locator("details[data-drawer=refresh]");
  const DROPBOX = MIXED.connectors.find((c) => c.name === "dropbox");
  const lineColor = (page, name) =>
    row(page, name).locator(".refresh__line").evaluate((e) => getComputedStyle(e).color);
  const control = (page, name, c) => row(page, name).locator(`[data-control="${c}"]`);
  const FORGET = "Also forget this app’s registration with the server";

  test("the last-refresh line says when and how the newest attempt went, failures in their tone", async () => {
    const page = await open("fixture=mixed");
    const line = row(page, "dropbox").locator(".refresh__line");
    assert.equal(await line.textContent(), "Last refresh: failed 3 min ago (503, transient) · History");
    assert.equal(await drawer(page, "dropbox").getAttribute("data-tone"), "warning");
    assert.equal(await row(page, "slack").locator(".refresh__line").textContent(), "Last refreshed 5 min ago (adopted) · History");
    assert.equal(await drawer(page, "slack").getAttribute("data-tone"), "ok");
    // only rows with a history have the line
    assert.equal(await page.locator("details[data-drawer=refresh]").count(), 2);
    assert.equal(await row(page, "notion").locator(".refresh").count(), 0);
    assert.equal(await row(page, "asana").locator(".refresh").count(), 0);
    // the relative time is absolute in its title, and the ticker keeps it current
    const time = row(page, "dropbox").locator(".refresh__line time");
    assert.equal(await time.getAttribute("datetime"), "2026-11-30T08:57:00.000Z");
    assert.match(await time.getAttribute("title"), /2026/);
    await page.evaluate(() => {
      window.__patchbayMock.setNow("2026-11-30T10:00:00Z");
      document.dispatchEvent(new Event("visibilitychange"));
    });
    assert.equal(await line.textContent(), "Last refresh: failed 1 h ago (503, transient) · History");

    // a refresh token the server refused: the error tone, distinct from the warning and the ok one
    const next = structuredClone(MIXED);
    next.connectors.find((c) => c.name === "dropbox").refresh_history.unshift({
      at: "2026-11-30T09:59:00Z",
      outcome: "permanent",
      http_status: 400,
      summary: "the token endpoint refused the refresh token; authorize again (400 invalid_grant)",
      detail: '{"error":"invalid_grant","error_description":"refresh token revoked"}',
      retries: 0,
    });
    const warning = await lineColor(page, "dropbox");
    await page.evaluate((r) => window.__patchbayMock.emitStatus(r), next);
    assert.equal(await line.textContent(), "Last refresh: failed 1 min ago (400, permanent) · History");
    assert.equal(await drawer(page, "dropbox").getAttribute("data-tone"), "error");
    const error = await lineColor(page, "dropbox");
    const ok = await lineColor(page, "slack");
    assert.equal(new Set([warning, error, ok]).size, 3, `${warning} / ${error} / ${ok}`);
    assert.equal(error, await page.evaluate(() => getComputedStyle(document.querySelector(".btn--danger")).color));
    assert.deepEqual(page.errors, []);
    await page.context.close();
  });

  test("opening the drawer lists each attempt with its outcome, status, retries and raw answer", async () => {
    const page = await open("fixture=mixed");
    const d = drawer(page, "dropbox");
    assert.equal(await d.evaluate((e) => e.open), false);
    assert.equal(await d.locator(".history").isVisible(), false);
    // keyboard: the row's first stop is the summary; Enter opens the drawer
    await row(page, "dropbox").focus();
    await page.keyboard.press("Tab");
    assert.equal(await page.evaluate(() => document.activeElement.dataset.control), "history");
    await page.keyboard.press("Enter");
    await page.waitForFunction(() => document.querySelector('li[data-connector="dropbox"] details').open);
    const entries = d.locator(".history__entry");
    assert.equal(await entries.count(), 2);
    const [first, second] = [entries.nth(0), entries.nth(1)];
    assert.equal(await first.locator("time").textContent(), "3 min ago");
    assert.match(await first.locator("time").getAttribute("title"), /2026/);
    assert.equal(await first.locator(".outcome").textContent(), "Transient");
    assert.match(await first.locator(".outcome").getAttribute("class"), /outcome--warning/);
    assert.equal(await first.locator(".history__summary").textContent(), DROPBOX.refresh_history[0].summary);
    assert.equal(await first.locator(".history__facts").textContent(), "HTTP 503");
    const pre = first.locator("pre.history__detail");
    assert.equal(await pre.evaluate((e) => e.textContent), DROPBOX.refresh_history[0].detail);
    assert.ok(await pre.isVisible());
    const box = await pre.evaluate((e) => ({
      scroll: e.scrollHeight > e.clientHeight,
      overflow: getComputedStyle(e).overflowY,
      select: getComputedStyle(e).userSelect,
    }));
    assert.deepEqual(box, { scroll: true, overflow: "auto", select: "text" }, "collapsed to a scrollable, selectable box");
    assert.equal(await second.locator(".outcome").textContent(), "Refreshed");
    assert.match(await second.locator(".outcome").getAttribute("class"), /outcome--ok/);
    assert.equal(await second.locator(".history__facts").textContent(), "HTTP 200 · 1 retry");
    assert.equal(await second.locator("pre").count(), 0);
    // the raw answer is reachable by Tab (to scroll it), and arrow keys there scroll, not move rows
    await page.keyboard.press("Tab");
    assert.equal(await page.evaluate(() => document.activeElement.dataset.control), "detail-0");
    await page.keyboard.press("ArrowDown");
    assert.equal(await focusedRow(page), "dropbox");
    // the arrow key scrolled the answer (keyboard scrolling may animate)
    await page.waitForFunction(() => document.querySelector('li[data-connector="dropbox"] pre').scrollTop > 0, null, {
      timeout: 3000,
    });
    // only the focused row's controls are in the tab order
    assert.equal(
      await page.$$eval('li[data-connector]:not([tabindex="0"]) :is(summary, pre, input, button)', (els) =>
        els.filter((e) => e.tabIndex !== -1).length,
      ),
      0,
    );
    // Escape closes the drawer and leaves the focus on its summary
    await page.keyboard.press("Escape");
    assert.equal(await d.evaluate((e) => e.open), false);
    assert.equal(await page.evaluate(() => document.activeElement.dataset.control), "history");
    assert.deepEqual(page.errors, []);
    await page.context.close();
  });

  test("the drawer stays open (and closed) across status-changed re-renders", async () => {
    const page = await open("fixture=mixed");
    await drawer(page, "dropbox").locator("summary").click();
    await page.waitForFunction(() => document.querySelector('li[data-connector="dropbox"] details').open);
    const before = await row(page, "dropbox").elementHandle();
    const next = structuredClone(MIXED);
    const dropbox = next.connectors.find((c) => c.name === "dropbox");
    dropbox.detail = "Authorized; the last refresh failed, the next pass retries.";
    dropbox.refresh_history.unshift({
      at: "2026-11-30T08:59:00Z",
      outcome: "retryable",
      http_status: null,
      summary: "the token endpoint could not be reached: connection refused",
      detail: null,
      retries: 3,
    });
    await page.evaluate((r) => window.__patchbayMock.emitStatus(r), next);
    assert.equal(await row(page, "dropbox").locator(".row__detail").textContent(), dropbox.detail);
    assert.equal(await before.evaluate((e) => e.isConnected), false, "the row was rebuilt");
    assert.equal(await drawer(page, "dropbox").evaluate((e) => e.open), true);
    const entries = drawer(page, "dropbox").locator(".history__entry");
    assert.equal(await entries.count(), 3);
    assert.equal(await entries.nth(0).locator(".outcome").textContent(), "Retryable");
    assert.equal(await entries.nth(0).locator(".history__facts").textContent(), "3 retries");
    assert.equal(
      await row(page, "dropbox").locator(".refresh__line").textContent(),
      "Last refresh: failed 1 min ago (retryable) · History",
    );
    // closed again, it stays closed through the next re-render
    await drawer(page, "dropbox").locator("summary").click();
    await page.waitForFunction(() => !document.querySelector('li[data-connector="dropbox"] details').open);
    dropbox.detail = "Changed again.";
    await page.evaluate((r) => window.__patchbayMock.emitStatus(r), next);
    assert.equal(await row(page, "dropbox").locator(".row__detail").textContent(), "Changed again.");
    assert.equal(await drawer(page, "dropbox").evaluate((e) => e.open), false);
    // the other row's drawer never opened
    assert.equal(await drawer(page, "slack").evaluate((e) => e.open), false);
    assert.deepEqual(page.errors, []);
    await page.context.close();
  });

  test("a drawer closed or opened just before a re-render stays as the user left it", async () => {
    const page = await open("fixture=mixed");
    await drawer(page, "dropbox").locator("summary").click();
    await page.waitForFunction(() => document.querySelector('li[data-connector="dropbox"] details').open);
    const next = structuredClone(MIXED);
    const dropbox = next.connectors.find((c) => c.name === "dropbox");
    // The click and the status in one task: the drawer's toggle event has not run at the re-render.
    const rerender = (detail) =>
      page.evaluate(
        ([r, text]) => {
          r.connectors.find((c) => c.name === "dropbox").detail = text;
          document.querySelector('li[data-connector="dropbox"] details[data-drawer="refresh"] summary').click();
          window.__patchbayMock.emitStatus(r);
        },
        [next, detail],
      );
    await rerender("Closed, then a status.");
    assert.equal(await row(page, "dropbox").locator(".row__detail").textContent(), "Closed, then a status.");
    assert.equal(await drawer(page, "dropbox").evaluate((e) => e.open), false);
    await rerender("Opened, then a status.");
    assert.equal(await row(page, "dropbox").locator(".row__detail").textContent(), "Opened, then a status.");
    assert.equal(await drawer(page, "dropbox").evaluate((e) => e.open), true);
    assert.deepEqual(page.errors, []);
    await page.context.close();
  });

  test("Disconnect on rows with a stored credential, Refresh now only where it has a refresh token, after the primary action", async () => {
    const page = await open("fixture=mixed");
    const withCred = MIXED.connectors.filter((c) => c.credential !== null).map((c) => c.name);
    const renewable = MIXED.connectors.filter((c) => c.credential?.has_refresh_token).map((c) => c.name);
    const owners = (control) =>
      page.$$eval(`[data-control=${control}]`, (bs) => bs.map((b) => b.closest("li").dataset.connector));
    assert.deepEqual(await owners("disconnect"), withCred);
    assert.deepEqual(await owners("refresh"), renewable);
    assert.deepEqual(renewable, ["asana", "dropbox", "slack"]);
    // figma and linear issued no refresh token: nothing to refresh, but still something to disconnect
    for (const name of ["figma", "linear"]) {
      assert.equal(await control(page, name, "refresh").count(), 0, name);
      assert.equal(await control(page, name, "disconnect").count(), 1, name);
    }
    // figma: Re-authorize stays first and primary; the others are secondary
    const side = (name) =>
      row(page, name).locator(".row__side button").evaluateAll((bs) =>
        bs.map((b) => [b.textContent, b.classList.contains("btn--primary")]),
      );
    assert.deepEqual(await side("figma"), [
      ["Re-authorize", true],
      ["Test", false],
      ["Disconnect", false],
    ]);
    assert.deepEqual(await side("dropbox"), [
      ["Test", false],
      ["Refresh now", false],
      ["Disconnect", false],
    ]);
    // a credential that gains a refresh token gains the button
    const next = structuredClone(MIXED);
    next.connectors.find((c) => c.name === "linear").credential.has_refresh_token = true;
    await page.evaluate((r) => window.__patchbayMock.emitStatus(r), next);
    assert.equal(await control(page, "linear", "refresh").count(), 1);
    await page.context.close();
  });

  test("Refresh now invokes refresh_connector with the name and shows the new history", async () => {
    const page = await open("fixture=mixed");
    await control(page, "dropbox", "refresh").click();
    const line = row(page, "dropbox").locator(".refresh__line");
    await page.waitForFunction(() =>
      document.querySelector('li[data-connector="dropbox"] .refresh__line')?.textContent.startsWith("Last refreshed"),
    );
    assert.deepEqual(await calls(page, "refresh_connector"), [{ name: "dropbox" }]);
    assert.equal(await line.textContent(), "Last refreshed just now · History");
    assert.equal(await drawer(page, "dropbox").getAttribute("data-tone"), "ok");
    assert.match(await row(page, "dropbox").locator(".row__meta").textContent(), /Token expires in 1 h/);
    const btn = control(page, "dropbox", "refresh");
    assert.equal(await btn.textContent(), "Refresh now");
    assert.equal(await btn.getAttribute("aria-disabled"), null);
    assert.equal(await page.evaluate(() => document.activeElement.dataset.control), "refresh", "focus stays on the button");
    assert.equal(await row(page, "dropbox").locator(".notice").count(), 0);
    await drawer(page, "dropbox").locator("summary").click();
    const entries = drawer(page, "dropbox").locator(".history__entry");
    assert.equal(await entries.count(), 3);
    assert.equal(await entries.nth(0).locator(".outcome").textContent(), "Refreshed");
    assert.equal(await entries.nth(0).locator(".history__summary").textContent(), "refreshed; valid until 2026-11-30 10:00 UTC");
    assert.equal(await entries.nth(1).locator(".outcome").textContent(), "Transient");

    // what the window draws is the command's answer (here without a status-changed beside it)
    const answer = structuredClone(await page.evaluate(() => window.__patchbayMock.report));
    answer.connectors.find((c) => c.name === "dropbox").refresh_history.unshift({
      at: "2026-11-30T09:00:00Z",
      outcome: "ambiguous",
      http_status: null,
      summary: "the refresh went out and its answer was lost: timed out",
      detail: null,
      retries: 0,
    });
    await page.evaluate((r) => window.__patchbayMock.nextResult("refresh_connector", r), answer);
    await control(page, "dropbox", "refresh").click();
    await page.waitForFunction(() =>
      document.querySelector('li[data-connector="dropbox"] .refresh__line')?.textContent.startsWith("Last refresh: failed"),
    );
    assert.equal(await line.textContent(), "Last refresh: failed just now (ambiguous) · History");
    // the refresh token is kept and presented again: a warning, not an error
    assert.equal(await drawer(page, "dropbox").getAttribute("data-tone"), "warning");
    assert.equal(await drawer(page, "dropbox").evaluate((e) => e.open), true, "the open drawer stayed open");
    assert.equal(await entries.count(), 4);

    // the refresher sent nothing (another refresh was under way): no new entry, the row says so
    const unchanged = structuredClone(await page.evaluate(() => window.__patchbayMock.report));
    await page.evaluate((r) => window.__patchbayMock.nextResult("refresh_connector", r), unchanged);
    await control(page, "slack", "refresh").click();
    const info = row(page, "slack").locator(".notice--info");
    await info.waitFor();
    assert.equal(
      await info.textContent(),
      "Nothing was refreshed: Patchbay has no usable refresh token for this credential, or another refresh was under way.",
    );
    assert.deepEqual(await calls(page, "refresh_connector"), [{ name: "dropbox" }, { name: "dropbox" }, { name: "slack" }]);
    assert.deepEqual(page.errors, []);
    await page.context.close();
  });

  test("Refresh now is busy while it runs, and a rejection shows as the row's notice", async () => {
    let page = await open("fixture=mixed");
    await page.evaluate(() =>
      window.__patchbayMock.setHandler(
        "refresh_connector",
        () =>
          new Promise((_, reject) => {
            window.__rejectRefresh = () => reject({ kind: "no_credential", message: "no stored credential for the connector slack" });
          }),
      ),
    );
    const btn = control(page, "slack", "refresh");
    await btn.click();
    await page.waitForFunction(() => typeof window.__rejectRefresh === "function");
    assert.equal(await btn.textContent(), "Refreshing…");
    assert.equal(await btn.getAttribute("aria-disabled"), "true");
    assert.equal(await control(page, "slack", "disconnect").getAttribute("aria-disabled"), "true");
    await btn.dispatchEvent("click");
    assert.equal((await calls(page, "refresh_connector")).length, 1, "a busy button does nothing");
    await page.evaluate(() => window.__rejectRefresh());
    const notice = row(page, "slack").locator(".notice--error");
    await notice.waitFor();
    assert.match(await notice.textContent(), /no stored credential for the connector slack/);
    assert.equal(await notice.locator("[data-kind]").getAttribute("data-kind"), "no_credential");
    assert.equal(await btn.textContent(), "Refresh now");
    assert.equal(await btn.getAttribute("aria-disabled"), null);
    await page.context.close();

    // ?fail=refresh_connector: every Refresh now rejects; the history is untouched
    page = await open("fixture=mixed&fail=refresh_connector");
    await control(page, "dropbox", "refresh").click();
    const err = row(page, "dropbox").locator(".notice--error");
    await err.waitFor();
    assert.match(await err.textContent(), /secret store did not answer/);
    assert.equal(await err.getAttribute("role"), "alert");
    assert.deepEqual(await calls(page, "refresh_connector"), [{ name: "dropbox" }]);
    assert.equal(await drawer(page, "dropbox").locator(".history__entry").count(), 2);
    assert.equal(
      await row(page, "dropbox").locator(".refresh__line").textContent(),
      "Last refresh: failed 3 min ago (503, transient) · History",
    );
    assert.deepEqual(page.errors, []);
    await page.context.close();
  });

  test("Disconnect needs a confirmation, sends forgetRegistration false by default, then offers Authorize", async () => {
    const page = await open("fixture=mixed");
    const btn = control(page, "slack", "disconnect");
    assert.equal(await btn.textContent(), "Disconnect");
    assert.equal(await control(page, "slack", "forget-registration").count(), 0);
    await btn.click();
    assert.equal(await btn.textContent(), "Confirm disconnect");
    const forget = row(page, "slack").getByLabel(FORGET);
    assert.equal(await forget.isVisible(), true);
    assert.equal(await forget.isChecked(), false);
    assert.deepEqual(await calls(page, "disconnect_connector"), []);
    await btn.click();
    await page.waitForFunction(() => document.querySelector('li[data-connector="slack"]').dataset.state === "needs_authorization");
    assert.deepEqual(await calls(page, "disconnect_connector"), [{ name: "slack", forgetRegistration: false }]);
    const primary = control(page, "slack", "primary");
    assert.equal(await primary.textContent(), "Authorize");
    assert.match(await primary.getAttribute("class"), /btn--primary/);
    assert.equal(await control(page, "slack", "refresh").count(), 0);
    assert.equal(await control(page, "slack", "disconnect").count(), 0);
    assert.equal(await row(page, "slack").locator(".refresh, .row__bridges, .row__meta").count(), 0);
    assert.equal(await page.textContent(".summary"), "7 need attention, listed first");
    assert.equal(await focusedRow(page), "slack");
    assert.deepEqual(page.errors, []);
    await page.context.close();
  });

  test("Disconnect from the keyboard with Also forget ticked sends forgetRegistration true", async () => {
    const page = await open("fixture=mixed");
    await control(page, "dropbox", "disconnect").focus();
    await page.keyboard.press("Enter");
    assert.equal(await control(page, "dropbox", "disconnect").textContent(), "Confirm disconnect");
    assert.equal(await page.evaluate(() => document.activeElement.textContent), "Confirm disconnect");
    await page.keyboard.press("Tab");
    assert.equal(await page.evaluate(() => document.activeElement.dataset.control), "forget-registration");
    await page.keyboard.press("Space");
    assert.equal(await control(page, "dropbox", "forget-registration").isChecked(), true);
    // a status-changed that rebuilds the row keeps the confirm, the tick and the focus
    const next = structuredClone(MIXED);
    next.connectors.find((c) => c.name === "dropbox").detail = "Still there.";
    await page.evaluate((r) => window.__patchbayMock.emitStatus(r), next);
    assert.equal(await row(page, "dropbox").locator(".row__detail").textContent(), "Still there.");
    assert.equal(await control(page, "dropbox", "forget-registration").isChecked(), true);
    assert.equal(await page.evaluate(() => document.activeElement.dataset.control), "forget-registration");
    // held until we answer, to see the busy state
    await page.evaluate(() =>
      window.__patchbayMock.setHandler(
        "disconnect_connector",
        () => new Promise((resolve) => (window.__finishDisconnect = resolve)),
      ),
    );
    await page.keyboard.press("Shift+Tab");
    await page.keyboard.press("Enter");
    await page.waitForFunction(() => typeof window.__finishDisconnect === "function");
    const btn = control(page, "dropbox", "disconnect");
    assert.equal(await btn.textContent(), "Disconnecting…");
    assert.equal(await btn.getAttribute("aria-disabled"), "true");
    assert.equal(await control(page, "dropbox", "refresh").getAttribute("aria-disabled"), "true");
    assert.deepEqual(await calls(page, "disconnect_connector"), [{ name: "dropbox", forgetRegistration: true }]);
    const answer = structuredClone(MIXED);
    Object.assign(answer.connectors.find((c) => c.name === "dropbox"), {
      state: "needs_authorization",
      label: "Needs authorization",
      severity: 60,
      needs_attention: true,
      blocks_start: true,
      action: "authorize",
      detail: "Disconnected.",
      credential: null,
      refresh_history: [],
    });
    await page.evaluate((r) => window.__finishDisconnect(r), answer);
    await page.waitForFunction(() => document.querySelector('li[data-connector="dropbox"]').dataset.state === "needs_authorization");
    assert.equal(await control(page, "dropbox", "primary").textContent(), "Authorize");
    assert.equal(await row(page, "dropbox").locator(".refresh, [data-control=disconnect]").count(), 0);
    assert.deepEqual(page.errors, []);
    await page.context.close();
  });

  test("Escape or a click elsewhere cancels the confirm; the option itself does not", async () => {
    const page = await open("fixture=mixed");
    const btn = control(page, "slack", "disconnect");
    await btn.click();
    assert.equal(await btn.textContent(), "Confirm disconnect");
    await page.keyboard.press("Escape");
    assert.equal(await btn.textContent(), "Disconnect");
    assert.equal(await control(page, "slack", "forget-registration").count(), 0);
    assert.equal(await page.evaluate(() => document.activeElement.dataset.control), "disconnect");

    await btn.click();
    await row(page, "slack").getByLabel(FORGET).check();
    assert.equal(await btn.textContent(), "Confirm disconnect", "ticking the option keeps the confirm");
    await page.click(".header__title");
    assert.equal(await btn.textContent(), "Disconnect");

    // a click on another row's button cancels too, and that button still does its job
    await btn.click();
    await control(page, "dropbox", "refresh").click();
    assert.equal(await btn.textContent(), "Disconnect");
    await page.waitForFunction(() =>
      document.querySelector('li[data-connector="dropbox"] .refresh__line')?.textContent.startsWith("Last refreshed"),
    );
    // a fresh confirm starts with the option unticked
    await btn.click();
    assert.equal(await control(page, "slack", "forget-registration").isChecked(), false);
    await page.keyboard.press("Escape");
    assert.deepEqual(await calls(page, "disconnect_connector"), []);
    assert.equal(await row(page, "slack").getAttribute("data-state"), "ready");
    assert.deepEqual(page.errors, []);
    await page.context.close();
  });

  test("a rejected Disconnect shows the error and keeps the credential", async () => {
    const page = await open("fixture=mixed&fail=disconnect_connector");
    const btn = control(page, "slack", "disconnect");
    await btn.click();
    await btn.click();
    const notice = row(page, "slack").locator(".notice--error");
    await notice.waitFor();
    assert.match(await notice.textContent(), /secret store did not answer/);
    assert.equal(await btn.textContent(), "Disconnect");
    assert.equal(await row(page, "slack").getAttribute("data-state"), "ready");
    assert.deepEqual(await calls(page, "disconnect_connector"), [{ name: "slack", forgetRegistration: false }]);
    await page.context.close();
  });
});

describe("connection checks", () => {
  const row = (page, name) => page.locator(`li[data-connector="${name}"]`);
  const control = (page, name, c) => row(page, name).locator(`[data-control="${c}"]`);
  const panel = (page, name) => row(page, name).locator("section.check");
  const SLACK = HEALTH.connectors.find((r) => r.connector === "slack");
  const stats = (r) => {
    const { transport, degraded, consecutive_failures, next_check_at, tools, ...rest } = r;
    return structuredClone(rest);
  };
  /** A check as the backend answers it: slack answered over streamable HTTP. */
  const slackCheck = (over = {}) => ({
    connector: "slack",
    checked_at: "2026-11-30T09:00:00.000Z",
    ok: true,
    skipped: null,
    configured_transport: "streamable-http",
    transport: "streamable-http",
    fell_back_to: null,
    write_back: null,
    latency_ms: 42,
    server: { name: "slack-mcp", version: "2.3.0", protocol_version: "2025-06-18" },
    tools: structuredClone(SLACK.tools.tools),
    error: null,
    advice: null,
    action: null,
    attempts: [{ transport: "streamable-http", ok: true, elapsed_ms: 43, error: null }],
    transition: "healthy",
    degraded: null,
    consecutive_failures: 0,
    health: { ...stats(SLACK), calls: 13, fail_rate: 1 / 13, last_check_at: "2026-11-30T09:00:00.000Z", last_ok_at: "2026-11-30T09:00:00.000Z" },
    ...over,
  });
  /** The token was revoked at the server: 401 from an OAuth-capable server. */
  const revoked = (name) =>
    slackCheck({
      connector: name,
      ok: false,
      latency_ms: null,
      server: null,
      tools: [],
      error: {
        kind: "needs_authorization",
        message: "the server answered 401 over streamable-http: it refused the stored token (expired or revoked), so it needs authorizing again",
        retryable: false,
        http_status: 401,
      },
      advice: `Authorize it: \`patchbay authorize ${name}\` or its Authorize button.`,
      action: "authorize",
      transition: "degraded",
    });

  test("Test on every row with a known transport: check_connector with the name, then latency and <connector>.<tool> tools", async () => {
    const page = await open("fixture=mixed");
    const owners = await page.$$eval("[data-control=test]", (bs) => bs.map((b) => b.closest("li").dataset.connector));
    assert.deepEqual(owners, MIXED.connectors.map((c) => c.name));
    const boardCalls = (await calls(page, "get_health_board")).length;
    assert.equal(boardCalls, 1, "the board is fetched on load");

    // held until we answer, to see the busy state
    await page.evaluate(() =>
      window.__patchbayMock.setHandler("check_connector", () => new Promise((resolve) => (window.__finishCheck = resolve))),
    );
    const btn = control(page, "slack", "test");
    assert.equal(await btn.textContent(), "Test");
    assert.equal(await btn.getAttribute("class"), "btn", "secondary");
    await btn.click();
    await page.waitForFunction(() => typeof window.__finishCheck === "function");
    assert.equal(await btn.textContent(), "Testing…");
    assert.equal(await btn.getAttribute("aria-disabled"), "true");
    await btn.dispatchEvent("click");
    assert.deepEqual(await calls(page, "check_connector"), [{ name: "slack" }], "a busy Test does nothing");
    // the backend records the check on the board before it answers
    await page.evaluate((r) => {
      const m = window.__patchbayMock;
      const board = structuredClone(m.board);
      Object.assign(board.connectors.find((x) => x.connector === "slack"), r.health);
      m.board = board;
      window.__finishCheck(r);
    }, slackCheck());

    const result = panel(page, "slack");
    await result.waitFor();
    assert.equal(await result.getAttribute("data-check"), "ok");
    assert.equal(await result.getAttribute("role"), "status");
    assert.equal(await result.locator(".check__line").textContent(), "Answered in 42 ms over streamable HTTP · 7 tools");
    assert.equal(await btn.textContent(), "Test");
    assert.equal(await btn.getAttribute("aria-disabled"), null);
    const tools = result.locator(".toollist li");
    assert.deepEqual(await tools.allTextContents(), SLACK.tools.tools.map((t) => `slack.${t.tool}`));
    assert.equal(
      await tools.first().getAttribute("title"),
      "Search messages — Search messages and files across the channels you can read.",
    );
    assert.equal(await tools.nth(4).getAttribute("title"), "Add an emoji reaction to a message.", "no title: the description alone");
    // collapsed until asked; opened, it stays open through a re-render of the row
    assert.equal(await result.locator(".toollist").isVisible(), false);
    await result.locator("summary").click();
    assert.equal(await result.locator(".toollist").isVisible(), true);
    assert.match(await result.locator(".check__server").textContent(), /slack-mcp 2\.3\.0 · MCP 2025-06-18/);
    const before = await row(page, "slack").elementHandle();
    const next = structuredClone(MIXED);
    next.connectors.find((c) => c.name === "slack").detail = "Rebuilt.";
    await page.evaluate((r) => window.__patchbayMock.emitStatus(r), next);
    assert.equal(await row(page, "slack").locator(".row__detail").textContent(), "Rebuilt.");
    assert.equal(await before.evaluate((e) => e.isConnected), false, "the row was rebuilt");
    assert.equal(await panel(page, "slack").locator(".toollist").isVisible(), true);

    // the board is fetched again after the Test, and the health line has this check in it
    await page.waitForFunction((n) => window.__patchbayMock.calls.filter((c) => c.cmd === "get_health_board").length > n, boardCalls);
    assert.match(await row(page, "slack").locator(".health__text").textContent(), /^13 checks · 8 % failed/);
    // the fresher result lists the tools; the health drawer no longer repeats the board's
    assert.equal(await row(page, "slack").locator("details[data-drawer=health] .toollist").count(), 0);

    // dismissed, the result goes and the focus lands on Test
    await result.locator("[data-control=dismiss-check]").click();
    assert.equal(await panel(page, "slack").count(), 0);
    assert.equal(await page.evaluate(() => document.activeElement.dataset.control), "test");
    assert.equal(await row(page, "slack").locator("details[data-drawer=health] .toollist li").count(), 7);

    // a row whose catalog entry is invalid (transport unknown) has no Test
    next.connectors.find((c) => c.name === "sentry").transport = "unknown";
    await page.evaluate((r) => window.__patchbayMock.emitStatus(r), next);
    assert.equal(await control(page, "sentry", "test").count(), 0);
    assert.equal(await control(page, "sentry", "primary").textContent(), "Copy catalog path");
    assert.deepEqual(page.errors, []);
    await page.context.close();
  });

  test("a failing check shows the error message and the advice, and is counted on the board", async () => {
    const page = await open("fixture=mixed&checkfail=slack");
    await control(page, "slack", "test").click();
    const result = panel(page, "slack");
    await result.waitFor();
    assert.equal(await result.getAttribute("data-check"), "failed");
    assert.equal(await result.getAttribute("role"), "alert");
    assert.equal(await result.locator(".check__title").textContent(), "Test failed");
    assert.equal(
      await result.locator(".check__message").textContent(),
      "cannot reach the server over streamable-http: Connection refused (os error 111)",
    );
    assert.equal(await result.locator(".check__message").getAttribute("data-kind"), "unreachable");
    assert.equal(
      await result.locator(".check__advice").textContent(),
      "Nothing answered at https://mcp.slack.com/mcp; is the server up, and the URL right?",
    );
    assert.equal(await result.locator("button.btn").count(), 0, "nothing to offer but the advice");
    await page.waitForFunction(() =>
      document.querySelector('li[data-connector="slack"] .health__text')?.textContent.startsWith("13 checks · 15 % failed"),
    );
    assert.match(await row(page, "slack").locator(".health__text").textContent(), /last error just now$/);
    assert.equal(await row(page, "slack").locator("details[data-drawer=health]").getAttribute("data-tone"), "warning");

    // both transports rejected, with the other attempt named; a rejected static credential
    // offers the command that stores it
    await control(page, "stripe", "test").click();
    const stripe = panel(page, "stripe");
    await stripe.waitFor();
    assert.equal(await stripe.locator(".check__title").textContent(), "Test failed (HTTP 410)");
    assert.equal(await stripe.locator(".check__attempt").textContent(), "Also tried SSE: the server rejected the sse handshake with HTTP 410: Gone");
    assert.match(await stripe.locator(".check__advice").textContent(), /neither streamable HTTP nor SSE worked/);
    assert.equal(await stripe.locator("button.btn").count(), 0, "the row's own Copy catalog path is not repeated");

    await page.context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: suite.url });
    await page.evaluate((r) => window.__patchbayMock.nextResult("check_connector", r), {
      ...revoked("linear"),
      transport: "sse",
      configured_transport: "sse",
      error: { kind: "credential_rejected", message: "the server answered 401 over sse: it refused the credential; check LINEAR_API_KEY", retryable: false, http_status: 401 },
      advice: "Check the value of LINEAR_API_KEY (sent in the Authorization header): `patchbay secret set LINEAR_API_KEY`. Authorizing does not apply to a static credential.",
      action: "set_variable",
    });
    await control(page, "linear", "test").click();
    const linear = panel(page, "linear");
    await linear.waitFor();
    assert.equal(await linear.locator("[data-control=check-authorize]").count(), 0, "a static credential is never authorized");
    assert.equal(await linear.locator(".check__advice code").textContent(), "patchbay secret set LINEAR_API_KEY");
    const copy = linear.locator("[data-control=check-copy]");
    assert.equal(await copy.textContent(), "Copy command");
    await copy.click();
    await page.waitForFunction(() =>
      document.querySelector('li[data-connector="linear"] [data-control=check-copy]').textContent === "Copied",
    );
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), "patchbay secret set LINEAR_API_KEY");

    // a check that contacted nothing says so, with the backend's advice
    await control(page, "github", "test").click();
    const github = panel(page, "github");
    await github.waitFor();
    assert.equal(await github.getAttribute("data-check"), "skipped");
    assert.equal(await github.locator(".check__title").textContent(), "Not tested");
    assert.match(await github.locator(".check__advice").textContent(), /^Nothing was contacted: missing configuration \(GITHUB_PAT has no value\)/);
    assert.deepEqual(
      (await calls(page, "check_connector")).map((a) => a.name),
      ["slack", "stripe", "linear", "github"],
    );
    assert.deepEqual(page.errors, []);
    await page.context.close();
  });

  test("a rejected check_connector shows inline; the row is left as it was", async () => {
    const page = await open("fixture=mixed&fail=check_connector");
    await control(page, "slack", "test").click();
    const notice = row(page, "slack").locator(".notice--error");
    await notice.waitFor();
    assert.match(await notice.textContent(), /health\.sqlite: database is locked/);
    assert.equal(await notice.locator("[data-kind]").getAttribute("data-kind"), "health_store");
    assert.equal(await panel(page, "slack").count(), 0);
    assert.equal(await control(page, "slack", "test").textContent(), "Test");
    await page.context.close();
  });

  test("a check that asks for authorizing starts the row's authorize flow", async () => {
    // notion has no credential: its check answers 401 with action authorize
    let page = await open("fixture=mixed");
    await control(page, "notion", "test").click();
    const result = panel(page, "notion");
    await result.waitFor();
    assert.equal(await result.locator(".check__message").getAttribute("data-kind"), "needs_authorization");
    assert.equal(await result.locator(".check__title").textContent(), "Test failed (HTTP 401)");
    assert.match(await result.locator(".check__advice").textContent(), /Authorize it: patchbay authorize notion/);
    const authorize = result.locator("[data-control=check-authorize]");
    assert.equal(await authorize.textContent(), "Authorize");
    assert.match(await authorize.getAttribute("class"), /btn--primary/);
    await authorize.click();
    await row(page, "notion").locator(".notice--info").waitFor();
    assert.deepEqual(await calls(page, "start_authorization"), [{ name: "notion" }]);
    assert.match(await row(page, "notion").locator(".notice--info").textContent(), /Finish in your browser/);
    await page.context.close();

    // slack is ready, but the server refused its token: the paste-back flow opens in its row and
    // stays open through a re-render, as the row's own Authorize would
    page = await open("fixture=mixed&start=paste_back");
    await page.evaluate((r) => window.__patchbayMock.nextResult("check_connector", r), revoked("slack"));
    await control(page, "slack", "test").click();
    await panel(page, "slack").locator("[data-control=check-authorize]").click();
    const flow = row(page, "slack").locator(".flow");
    await flow.waitFor();
    assert.deepEqual(await calls(page, "start_authorization"), [{ name: "slack" }]);
    assert.equal(await page.evaluate(() => document.activeElement?.dataset.control), "pasted");
    const next = structuredClone(MIXED);
    next.connectors.find((c) => c.name === "slack").detail = "Still ready, says the status.";
    await page.evaluate((r) => window.__patchbayMock.emitStatus(r), next);
    assert.equal(await flow.isVisible(), true);
    // completed: a new credential outdates the failed check
    await flow.locator("[data-control=pasted]").fill("c0de");
    const answer = structuredClone(next);
    answer.connectors.find((c) => c.name === "slack").credential.updated_at = "2026-11-30T09:00:00Z";
    await page.evaluate((r) => window.__patchbayMock.nextResult("complete_authorization", r), answer);
    await flow.locator("[data-control=complete]").click();
    await flow.waitFor({ state: "detached" });
    assert.deepEqual(await calls(page, "complete_authorization"), [{ name: "slack", pasted: "c0de" }]);
    assert.equal(await panel(page, "slack").count(), 0);
    assert.deepEqual(page.errors, []);
    await page.context.close();
  });

  test("falls back to SSE: Save SSE to catalog invokes write_back_transport, then a notice names the file", async () => {
    const page = await open("fixture=mixed");
    await control(page, "deepwiki", "test").click();
    const result = panel(page, "deepwiki");
    await result.waitFor();
    assert.equal(await result.locator(".check__line").textContent(), "Answered in 212 ms over SSE · 3 tools");
    assert.equal(await result.locator(".check__fallback-text").textContent(), "The server rejected streamable HTTP; SSE answered.");
    const save = result.locator("[data-control=write-back]");
    assert.equal(await save.textContent(), "Save SSE to catalog");
    assert.match(await save.getAttribute("title"), /\/home\/me\/\.config\/patchbay\/mcp\.json/);
    assert.equal(await row(page, "deepwiki").locator(".row__transport").textContent(), "streamable-http");
    assert.deepEqual(await calls(page, "write_back_transport"), [], "nothing is written unasked");
    await save.click();
    const notice = row(page, "deepwiki").locator(".notice--info");
    await notice.waitFor();
    assert.deepEqual(await calls(page, "write_back_transport"), [{ name: "deepwiki", transport: "sse" }]);
    assert.equal(await notice.textContent(), "Saved SSE as DeepWiki’s transport in /home/me/.config/patchbay/mcp.json.");
    assert.equal(await notice.locator("code").textContent(), "/home/me/.config/patchbay/mcp.json");
    assert.equal(await row(page, "deepwiki").locator(".row__transport").textContent(), "sse");
    // saved: the offer is gone, the result stays
    assert.equal(await result.locator("[data-control=write-back], .check__fallback").count(), 0);
    assert.equal(await result.locator(".check__line").textContent(), "Answered in 212 ms over SSE · 3 tools");
    assert.deepEqual(page.errors, []);
    await page.context.close();
  });

  test("a failed write-back shows inline and keeps the offer", async () => {
    const page = await open("fixture=mixed&fail=write_back_transport");
    await control(page, "deepwiki", "test").click();
    await panel(page, "deepwiki").locator("[data-control=write-back]").click();
    const notice = row(page, "deepwiki").locator(".notice--error");
    await notice.waitFor();
    assert.match(await notice.textContent(), /it is not valid JSON/);
    assert.equal(await panel(page, "deepwiki").locator("[data-control=write-back]").textContent(), "Save SSE to catalog");
    assert.equal(await row(page, "deepwiki").locator(".row__transport").textContent(), "streamable-http");
    await page.context.close();
  });

  test("the health line: calls, failure rate, p50, p95 and the last error, only for checked connectors", async () => {
    const page = await open("fixture=mixed");
    const line = (name) => row(page, name).locator("details[data-drawer=health] > summary");
    assert.equal(await line("slack").textContent(), "12 checks · 8 % failed · p50 40 ms · p95 120 ms · last error 3 min ago · Details");
    assert.equal(await line("filesystem").textContent(), "3 checks · 0 % failed · p50 850 ms · p95 1420 ms · Details");
    assert.equal(await line("dropbox").textContent(), "9 checks · 44 % failed · p50 85 ms · p95 230 ms · last error 1 min ago · Details");
    const checked = HEALTH.connectors.filter((r) => r.calls > 0).map((r) => r.connector).sort();
    const shown = await page.$$eval("details[data-drawer=health]", (ds) => ds.map((d) => d.closest("li").dataset.connector).sort());
    assert.deepEqual(shown, checked);
    assert.deepEqual(checked, ["dropbox", "filesystem", "linear", "slack"]);
    // the last error's time is absolute in its title, with the error
    const time = line("slack").locator("time");
    assert.equal(await time.getAttribute("datetime"), "2026-11-30T08:57:00.000Z");
    assert.match(await time.getAttribute("title"), /2026.*: the server answered HTTP 502 over streamable-http: Bad Gateway/);
    // the row describes itself with it
    assert.match(await row(page, "slack").getAttribute("aria-describedby"), /c-slack-health/);
    await page.context.close();
  });

  test("a degraded connector is marked in the error tone, and a passing check clears it", async () => {
    const page = await open("fixture=mixed");
    const marker = row(page, "dropbox").locator(".row__degraded");
    assert.equal(await page.locator(".row__degraded").count(), 1, "only dropbox is degraded");
    const text = await marker.locator(".row__degraded-text").textContent();
    assert.match(text, /^Degraded since .+: the server answered HTTP 503 over streamable-http: Service Temporarily Unavailable$/);
    assert.equal(await marker.locator("time").getAttribute("datetime"), "2026-11-30T08:41:05.000Z");
    assert.match(await marker.textContent(), /Agents are told it is unavailable until a check passes/);
    const danger = await page.evaluate(() => getComputedStyle(document.querySelector(".btn--danger")).color);
    assert.equal(await marker.evaluate((e) => getComputedStyle(e).color), danger);
    assert.equal(await row(page, "dropbox").locator(".badge--degraded").textContent(), "Degraded");
    assert.match(await row(page, "dropbox").getAttribute("aria-labelledby"), /c-dropbox-degraded-badge/);
    assert.equal(await row(page, "dropbox").locator("details[data-drawer=health]").getAttribute("data-tone"), "error");
    // the status badge stays what the status says
    assert.equal(await row(page, "dropbox").getAttribute("data-state"), "ready");

    await control(page, "dropbox", "test").click();
    await panel(page, "dropbox").waitFor();
    await page.waitForFunction(() => !document.querySelector('li[data-connector="dropbox"] .row__degraded'));
    assert.equal(await row(page, "dropbox").locator(".badge--degraded").count(), 0);
    assert.equal(await page.evaluate(() => window.__patchbayMock.board.connectors.find((r) => r.connector === "dropbox").degraded), null);
    await page.context.close();
  });

  test("the health drawer lists failures and the last tools, and keeps its state across re-renders", async () => {
    const page = await open("fixture=mixed");
    const drawer = () => row(page, "dropbox").locator("details[data-drawer=health]");
    assert.equal(await drawer().evaluate((e) => e.open), false);
    // the keyboard reaches it after the refresh drawer; Enter opens it
    await row(page, "dropbox").focus();
    await page.keyboard.press("Tab");
    assert.equal(await page.evaluate(() => document.activeElement.dataset.control), "history");
    await page.keyboard.press("Tab");
    assert.equal(await page.evaluate(() => document.activeElement.dataset.control), "health");
    await page.keyboard.press("Enter");
    await page.waitForFunction(() => document.querySelector('li[data-connector="dropbox"] details[data-drawer=health]').open);
    assert.match(await drawer().locator(".health__facts").textContent(), /^Last checked 1 min ago · last passed 29 min ago · next counted check in under a minute · 4 failures in a row$/);
    const entries = drawer().locator(".history__entry");
    assert.equal(await entries.count(), 4);
    const first = entries.nth(0);
    assert.equal(await first.locator("time").textContent(), "1 min ago");
    assert.match(await first.locator("time").getAttribute("title"), /2026/);
    assert.equal(await first.locator(".outcome").textContent(), "Server error");
    assert.equal(await first.locator(".history__summary").textContent(), "the server answered HTTP 503 over streamable-http: Service Temporarily Unavailable");
    assert.equal(await first.locator(".history__facts").textContent(), "streamable HTTP · HTTP 503 · after 182 ms · 4th failure in a row");
    assert.equal(await entries.nth(3).locator(".outcome").textContent(), "Timed out");
    assert.equal(await entries.nth(3).locator(".history__facts").textContent(), "streamable HTTP · after 10004 ms");
    assert.deepEqual(
      await drawer().locator(".toollist li").allTextContents(),
      HEALTH.connectors.find((r) => r.connector === "dropbox").tools.tools.map((t) => t.name),
    );

    // a status-changed that rebuilds the row, and a new board, keep it open
    const before = await row(page, "dropbox").elementHandle();
    const next = structuredClone(MIXED);
    next.connectors.find((c) => c.name === "dropbox").detail = "Rebuilt.";
    await page.evaluate((r) => window.__patchbayMock.emitStatus(r), next);
    assert.equal(await before.evaluate((e) => e.isConnected), false, "the row was rebuilt");
    assert.equal(await drawer().evaluate((e) => e.open), true);
    await page.evaluate(() => {
      const m = window.__patchbayMock;
      const board = structuredClone(m.board);
      board.connectors.find((r) => r.connector === "dropbox").calls = 10;
      m.board = board;
      m.emitHealthChanged();
    });
    await page.waitForFunction(() =>
      document.querySelector('li[data-connector="dropbox"] .health__text')?.textContent.startsWith("10 checks"),
    );
    assert.equal(await drawer().evaluate((e) => e.open), true);
    assert.equal(await page.evaluate(() => document.activeElement.dataset.control), "health", "the focus stayed");
    // Escape closes it; it stays closed through the next re-render
    await page.keyboard.press("Escape");
    assert.equal(await drawer().evaluate((e) => e.open), false);
    next.connectors.find((c) => c.name === "dropbox").detail = "Rebuilt again.";
    await page.evaluate((r) => window.__patchbayMock.emitStatus(r), next);
    assert.equal(await row(page, "dropbox").locator(".row__detail").textContent(), "Rebuilt again.");
    assert.equal(await drawer().evaluate((e) => e.open), false);
    // the refresh drawer is kept apart
    assert.equal(await row(page, "dropbox").locator("details[data-drawer=refresh]").evaluate((e) => e.open), false);
    assert.deepEqual(page.errors, []);
    await page.context.close();
  });

  test("health-changed fetches the board again", async () => {
    const page = await open("fixture=mixed");
    const count = async () => (await calls(page, "get_health_board")).length;
    assert.equal(await count(), 1);
    assert.equal(await row(page, "linear").locator(".row__degraded").count(), 0);
    await page.evaluate(() => {
      const m = window.__patchbayMock;
      const board = structuredClone(m.board);
      Object.assign(board.connectors.find((r) => r.connector === "linear"), {
        calls: 8,
        failures: 3,
        fail_rate: 3 / 8,
        last_error: "cannot reach the server over sse: Connection refused (os error 111)",
        last_error_at: "2026-11-30T08:58:00.000Z",
        // as a check that just degraded it sends it: nanoseconds (chrono's default format)
        degraded: { since: "2026-11-30T08:58:00.123456789Z", error: "cannot reach the server over sse: Connection refused (os error 111)", kind: "unreachable" },
        consecutive_failures: 3,
      });
      m.board = board;
      m.emitHealthChanged();
    });
    await row(page, "linear").locator(".row__degraded").waitFor();
    assert.equal(await count(), 2);
    assert.match(await row(page, "linear").locator(".row__degraded-text").textContent(), /: cannot reach the server over sse: Connection refused/);
    assert.equal(await row(page, "linear").locator(".row__degraded time").getAttribute("datetime"), "2026-11-30T08:58:00.123Z");
    assert.equal(
      await row(page, "linear").locator(".health__text").textContent(),
      "8 checks · 38 % failed · p50 62 ms · p95 95 ms · last error 2 min ago",
    );
    await page.context.close();
  });

  test("without a readable board the rows render without health lines", async () => {
    const page = await open("fixture=mixed&fail=get_health_board");
    assert.deepEqual(await rowNames(page), MIXED.connectors.map((c) => c.name));
    assert.equal(await page.locator("details[data-drawer=health], .row__degraded").count(), 0);
    assert.equal(await control(page, "slack", "test").count(), 1);
    assert.deepEqual(page.errors, []);
    await page.context.close();
  });

  test("the confirm buttons meet WCAG AA contrast in both themes", async () => {
    const page = await open("fixture=mixed");
    // (a click elsewhere cancels the disconnect confirm, not the delete one: delete first)
    await page.locator("li[data-unclaimed] [data-control=delete]").first().click();
    await control(page, "slack", "disconnect").click();
    await page.mouse.move(0, 0); // at rest, not hovered
    const ratios = () =>
      page.evaluate(() => {
        const rgb = (c) => c.match(/[\d.]+/g).slice(0, 3).map(Number);
        const lum = ([r, g, b]) =>
          [r, g, b]
            .map((v) => v / 255)
            .map((v) => (v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4))
            .reduce((a, v, i) => a + v * [0.2126, 0.7152, 0.0722][i], 0);
        const ratio = (el) => {
          const s = getComputedStyle(el);
          const [a, b] = [lum(rgb(s.color)), lum(rgb(s.backgroundColor))];
          return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
        };
        return [
          ...document.querySelectorAll(".btn--danger-confirm, .btn--primary"),
        ].map((b) => [b.textContent, Math.round(ratio(b) * 100) / 100]);
      });
    for (const scheme of ["light", "dark"]) {
      await page.emulateMedia({ colorScheme: scheme });
      const found = await ratios();
      const names = found.map(([t]) => t);
      assert.ok(names.includes("Confirm disconnect") && names.includes("Confirm delete"), names.join(", "));
      for (const [text, r] of found) assert.ok(r >= 4.5, `${scheme}: ${text} ${r}:1`);
    }
    await page.context.close();
  });
});

describe("keyboard", () => {
  test("arrow keys, Home and End move between rows; Enter runs the row's action; Tab reaches its buttons", async () => {
    const page = await open("fixture=mixed");
    const names = MIXED.connectors.map((c) => c.name);
    // The header's "Add connector" comes first, then the closed "Catalog files" disclosure, then
    // the list (one row in the tab order).
    await page.keyboard.press("Tab");
    assert.equal(await page.evaluate(() => document.activeElement.dataset.control), "open-gallery");
    await page.keyboard.press("Tab");
    assert.equal(await page.evaluate(() => document.activeElement.className), "sources__summary");
    await page.keyboard.press("Tab");
    assert.equal(await focusedRow(page), names[0]);
    assert.ok(await focusedIsRow(page));
    assert.equal(await page.locator("li[data-connector][tabindex='0']").count(), 1, "roving tabindex");
    await page.keyboard.press("ArrowDown");
    assert.equal(await focusedRow(page), names[1]);
    await page.keyboard.press("End");
    assert.equal(await focusedRow(page), names.at(-1));
    await page.keyboard.press("ArrowDown");
    assert.equal(await focusedRow(page), names.at(-1), "stays on the last row");
    await page.keyboard.press("Home");
    assert.equal(await focusedRow(page), names[0]);
    await page.keyboard.press("ArrowUp");
    assert.equal(await focusedRow(page), names[0]);

    const notion = names.indexOf("notion");
    for (let i = 0; i < notion; i++) await page.keyboard.press("ArrowDown");
    assert.equal(await focusedRow(page), "notion");
    await page.keyboard.press("Enter");
    await page.waitForSelector('li[data-connector="notion"] .notice--info');
    assert.deepEqual(await calls(page, "start_authorization"), [{ name: "notion" }]);

    await page.keyboard.press("ArrowDown");
    assert.equal(await focusedRow(page), "github");
    await page.keyboard.press("Tab");
    assert.equal(await focusedRow(page), "github");
    // Its key's field and Save, the terminal command's Copy, its "Use in another client"
    // drawer (issue 12), then the buttons beside.
    assert.equal(await page.evaluate(() => document.activeElement.dataset.control), "key-value");
    await page.keyboard.press("Tab");
    assert.equal(await page.evaluate(() => document.activeElement.textContent), "Save");
    await page.keyboard.press("Tab");
    assert.equal(await page.evaluate(() => document.activeElement.textContent), "Copy command");
    await page.keyboard.press("Tab");
    assert.equal(await page.evaluate(() => document.activeElement.dataset.control), "clients");
    await page.keyboard.press("Tab");
    assert.equal(await page.evaluate(() => document.activeElement.textContent), "Test");
    // the focused row's own buttons are the only ones in the tab order; the next stop is past the list
    await page.keyboard.press("Tab");
    assert.equal(await focusedRow(page), null);
    assert.ok(await page.evaluate(() => !!document.activeElement.closest("li[data-unclaimed]")));
    await page.context.close();
  });

  test("has a visible focus ring on the focused row", async () => {
    const page = await open("fixture=mixed");
    await page.keyboard.press("Tab");
    const shadow = await page.evaluate(() => getComputedStyle(document.activeElement).boxShadow);
    assert.notEqual(shadow, "none");
    await page.context.close();
  });
});

describe("live updates", () => {
  test("status-changed re-renders in place, keeping focus and the focused row's position", async () => {
    const page = await open("fixture=mixed", { viewport: { width: 900, height: 420 } });
    await page.locator('li[data-connector="asana"]').focus();
    await page.evaluate(() => document.querySelector(".scroller").scrollBy(0, 200));
    const before = await page.evaluate(() => ({
      top: document.querySelector('li[data-connector="asana"]').getBoundingClientRect().top,
      scroll: document.querySelector(".scroller").scrollTop,
      slack: document.querySelector('li[data-connector="slack"]'),
    }));
    assert.ok(before.scroll > 0);

    // notion becomes ready (moves to the end), a new problem row appears on top
    const next = structuredClone(MIXED);
    const notion = next.connectors.find((c) => c.name === "notion");
    Object.assign(notion, { state: "ready", label: "Ready", severity: 0, needs_attention: false, blocks_start: false, action: null, detail: "Authorized." });
    next.connectors = next.connectors.filter((c) => c !== notion);
    next.connectors.push(notion);
    next.connectors.unshift({ ...structuredClone(MIXED.connectors[0]), name: "zendesk", title: "Zendesk" });
    next.need_attention = 6;
    await page.evaluate((r) => window.__patchbayMock.emitStatus(r), next);

    assert.deepEqual(await rowNames(page), next.connectors.map((c) => c.name));
    assert.equal(await page.getAttribute('li[data-connector="notion"]', "data-state"), "ready");
    assert.equal(await focusedRow(page), "asana");
    assert.ok(await focusedIsRow(page));
    const afterTop = await page.evaluate(
      () => document.querySelector('li[data-connector="asana"]').getBoundingClientRect().top,
    );
    assert.ok(Math.abs(afterTop - before.top) < 1, `row stayed put (${before.top} → ${afterTop})`);
    // an unchanged row keeps its node
    assert.ok(await page.evaluate(() => document.querySelector('li[data-connector="slack"]').isConnected));
    await page.context.close();
  });

  test("a focused button survives an update of its own row", async () => {
    const page = await open("fixture=mixed");
    await page.locator('li[data-connector="figma"] [data-control=primary]').focus();
    const next = structuredClone(MIXED);
    next.connectors.find((c) => c.name === "figma").detail = "Still expired.";
    await page.evaluate((r) => window.__patchbayMock.emitStatus(r), next);
    assert.equal(await page.textContent('li[data-connector="figma"] .row__detail'), "Still expired.");
    assert.equal(await focusedRow(page), "figma");
    assert.equal(await page.evaluate(() => document.activeElement.dataset.control), "primary");
    await page.context.close();
  });

  test("focus-connector scrolls to, focuses and highlights that row", async () => {
    const page = await open("fixture=mixed", { viewport: { width: 900, height: 420 } });
    await page.evaluate(() => window.__patchbayMock.focusConnector("slack"));
    assert.equal(await focusedRow(page), "slack");
    assert.ok(await focusedIsRow(page));
    const row = page.locator('li[data-connector="slack"]');
    assert.match(await row.getAttribute("class"), /row--highlight/);
    await page.waitForFunction(() => {
      const r = document.querySelector('li[data-connector="slack"]').getBoundingClientRect();
      const s = document.querySelector(".scroller").getBoundingClientRect();
      return r.top >= s.top - 1 && r.bottom <= s.bottom + 1;
    });
    assert.equal(await page.locator("li[data-connector][tabindex='0']").getAttribute("data-connector"), "slack");
    await page.context.close();
  });
});

describe("opened from the tray", () => {
  test("a window opened for a connector (?focus=NAME) lands on that row", async () => {
    const page = await open("fixture=mixed&focus=slack", { viewport: { width: 900, height: 420 } });
    await page.waitForFunction(() =>
      document.activeElement?.closest("li[data-connector]")?.dataset.connector === "slack");
    assert.equal(await focusedRow(page), "slack");
    assert.match(await page.locator('li[data-connector="slack"]').getAttribute("class"), /row--highlight/);
    await page.context.close();
  });
});

describe("theme and CSP", () => {
  test("dark colour scheme changes the background", async () => {
    const page = await open("fixture=mixed");
    const bg = () => page.evaluate(() => getComputedStyle(document.body).backgroundColor);
    const light = await bg();
    await page.emulateMedia({ colorScheme: "dark" });
    await page
      .waitForFunction((l) => getComputedStyle(document.body).backgroundColor !== l, light, { timeout: 3000 })
      .catch(() => {});
    const dark = await bg();
    assert.notEqual(light, dark);
    const lum = (c) => c.match(/\d+/g).slice(0, 3).reduce((a, b) => a + Number(b), 0);
    assert.ok(lum(dark) < lum(light), `${dark} darker than ${light}`);
    await page.context.close();
  });

  test("runs under the strict CSP without violations", async () => {
    const context = await suite.browser.newContext();
    const page = await context.newPage();
    await page.addInitScript(() => {
      window.__cspViolations = [];
      document.addEventListener("securitypolicyviolation", (e) =>
        window.__cspViolations.push(`${e.violatedDirective} ${e.blockedURI}`),
      );
    });
    const messages = [];
    page.on("console", (m) => messages.push(m.text()));
    for (const name of ["mixed", "empty", "catalog-error", "store-unreachable", "all-ready"]) {
      const res = await page.goto(`${suite.url}?fixture=${name}`);
      assert.match(res.headers()["content-security-policy"], /script-src 'self'/);
      await page.waitForSelector("#app:not([aria-busy])");
      await page.evaluate(() => window.__patchbayMock.focusConnector(window.__patchbayMock.report.connectors[0]?.name ?? ""));
      assert.deepEqual(await page.evaluate(() => window.__cspViolations), [], name);
    }
    // the paste-back panel too
    await page.goto(`${suite.url}?fixture=mixed&start=port_taken`);
    await page.waitForSelector("#app:not([aria-busy])");
    await page.click('li[data-connector="notion"] [data-control=primary]');
    await page.waitForSelector(".flow [data-control=pasted]");
    assert.deepEqual(await page.evaluate(() => window.__cspViolations), [], "paste-back panel");
    // the refresh drawer and the disconnect confirm too
    await page.click('li[data-connector="dropbox"] details[data-drawer] summary');
    await page.click('li[data-connector="slack"] [data-control=disconnect]');
    await page.waitForSelector('li[data-connector="slack"] [data-control=forget-registration]');
    assert.deepEqual(await page.evaluate(() => window.__cspViolations), [], "refresh drawer, disconnect confirm");
    // a test result with its tools, the fallback offer, and the health drawer
    await page.click('li[data-connector="deepwiki"] [data-control=test]');
    await page.click('li[data-connector="deepwiki"] section.check summary');
    await page.click('li[data-connector="dropbox"] details[data-drawer=health] summary');
    await page.waitForSelector('li[data-connector="deepwiki"] [data-control=write-back]');
    assert.deepEqual(await page.evaluate(() => window.__cspViolations), [], "test result, health drawer");
    assert.deepEqual(messages.filter((m) => /Content.Security.Policy|Refused to/i.test(m)), []);
    assert.ok((await page.locator("li[data-connector]").count()) > 0, "the app's scripts ran");
    await context.close();
  });
});
