// Browser tests of issue 11 in the Connectors window: the first run (nothing in use), the
// "Add connector" gallery, and rows found in clients (found_in, origin "client", adopted
// credentials). Real Chromium against the mock backend, which implements enable_connector,
// disable_connector and manage_connector on its own state, so the real view code runs.

import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { cliStatus, patchbayBinFor } from "./cli-status.mjs";
import { mockCalls, windowSuite } from "./harness.mjs";

const fixture = (name) =>
  JSON.parse(readFileSync(new URL(`../src/fixtures/${name}.json`, import.meta.url), "utf8"));
const FIRST_RUN = fixture("first-run");
const FOUND = fixture("found");
const CATALOG = JSON.parse(readFileSync(new URL("../../catalog/mcp.json", import.meta.url), "utf8"));

const suite = windowSuite();
const open = suite.open;

const rowNames = (page) => page.$$eval("li[data-connector]", (els) => els.map((e) => e.dataset.connector));
const visibleEntries = (page) =>
  page.$$eval("#gallery-list li[data-gallery]", (els) => els.filter((e) => !e.hidden).map((e) => e.dataset.gallery));
const calls = mockCalls;
const active = (page) =>
  page.evaluate(() => {
    const a = document.activeElement;
    return {
      control: a?.dataset.control ?? null,
      row: a?.closest("li[data-connector]")?.dataset.connector ?? null,
      entry: a?.closest("li[data-gallery]")?.dataset.gallery ?? null,
      text: a?.textContent ?? null,
      id: a?.id ?? null,
    };
  });
const entry = (page, name) => page.locator(`li[data-gallery="${name}"]`);
const row = (page, name) => page.locator(`li[data-connector="${name}"]`);

async function openGallery(page, from = ".empty [data-control=open-gallery]") {
  await page.click(from);
  await page.waitForSelector("#gallery:not([hidden])");
}

describe("first run", () => {
  test("the fixture is the shipped catalog, whole, as the gallery", () => {
    const names = Object.keys(CATALOG).filter((k) => k !== "$schema");
    assert.equal(FIRST_RUN.connectors.length, 0);
    assert.equal(FIRST_RUN.need_attention, 0);
    assert.deepEqual(FIRST_RUN.gallery.map((g) => g.name).sort(), names.sort(), "regenerate it: node scripts/gallery-fixtures.mjs");
  });

  test("no connector in use: the empty state, a quiet summary, and no gallery entry counted", async () => {
    const page = await open("fixture=first-run");
    assert.deepEqual(await rowNames(page), []);
    assert.equal(await page.textContent(".summary"), "No connectors in use");
    assert.ok(await page.locator(".summary--ok").isVisible(), "the summary is not an attention one");
    assert.equal(await page.locator(".summary .summary__icon").count(), 0, "no check mark: nothing is in use");
    assert.equal(await page.textContent(".empty__title"), "No connectors in use yet");
    assert.match(await page.textContent(".empty__text"), /Patchbay keeps the MCP servers your agents use/);
    const note = await page.textContent(".empty__note");
    for (const client of ["Claude Code", "Cursor", "Claude Desktop", "VS Code", "Windsurf", "Gemini CLI", "Codex"]) {
      assert.ok(note.includes(client), client);
    }
    assert.match(note, /appear here automatically/);
    // The primary action is there, named, and nothing counts the 21 gallery entries.
    const add = page.getByRole("button", { name: "Add connector" });
    assert.equal(await add.count(), 2, "the header's and the empty state's");
    assert.ok(await page.locator(".empty [data-control=open-gallery].btn--primary").isVisible());
    assert.doesNotMatch(await page.textContent("#app"), /need(s)? attention|\d+ connectors? ready/);
    assert.equal(await page.locator("#gallery").isVisible(), false);
    assert.equal(await page.locator(".unclaimed").isVisible(), false);
    assert.deepEqual(page.errors, []);
    await page.context.close();
  });
});

describe("the gallery", () => {
  test("reachable from the empty state and the header; lists every entry with what it needs", async () => {
    const page = await open("fixture=first-run");
    await openGallery(page);
    assert.equal((await active(page)).id, "gallery-search", "the search field has the focus");
    assert.deepEqual(await visibleEntries(page), FIRST_RUN.gallery.map((g) => g.name));
    assert.equal(await page.textContent("#gallery-count"), `${FIRST_RUN.gallery.length} connectors to add`);
    // title, description, transport and needs
    const asana = entry(page, "asana");
    assert.equal(await asana.locator(".row__title").textContent(), "Asana");
    assert.equal(await asana.locator(".gentry__description").textContent(), CATALOG.asana.description);
    assert.equal(await asana.locator(".row__transport").textContent(), "sse");
    assert.equal(await asana.locator(".gentry__needs").textContent(), "Sign in");
    assert.equal(await entry(page, "brave-search").locator(".gentry__needs").textContent(), "Needs an API key: BRAVE_API_KEY");
    assert.equal(await entry(page, "github").locator(".gentry__needs").textContent(), "Needs an API key: GITHUB_TOKEN");
    assert.equal(await entry(page, "memory").locator(".gentry__needs").textContent(), "Ready to use");
    // accessible names on the controls
    assert.equal(await page.getByRole("button", { name: "Add Asana" }).count(), 1);
    assert.equal(await page.getByRole("searchbox", { name: "Search connectors to add" }).count(), 1);
    assert.equal(await page.getByRole("button", { name: "Back to your connectors" }).count(), 1);
    assert.equal(await page.getByRole("list", { name: "Connectors you can add" }).count(), 1);
    // the list is out of the way while the gallery is open
    assert.equal(await page.locator(".connectors").isVisible(), false);
    await page.keyboard.press("Escape");
    assert.equal(await page.locator("#gallery").isVisible(), false);

    // from the header too (a list with rows)
    const found = await open("fixture=found");
    await openGallery(found, "header [data-control=open-gallery]");
    assert.equal(await found.locator("header [data-control=open-gallery]").isVisible(), false);
    assert.deepEqual(await visibleEntries(found), FOUND.gallery.map((g) => g.name));
    assert.ok(!FOUND.gallery.some((g) => FOUND.connectors.some((c) => c.name === g.name)), "in use is not offered");
    await found.keyboard.press("Escape");
    assert.equal((await active(found)).control, "open-gallery", "Esc gives the focus back to the opener");
    assert.deepEqual(await rowNames(found), FOUND.connectors.map((c) => c.name));
    assert.deepEqual(page.errors, []);
    assert.deepEqual(found.errors, []);
    await page.context.close();
    await found.context.close();
  });

  test("search filters by name, title and description as you type, case-insensitively", async () => {
    const page = await open("fixture=first-run");
    await openGallery(page);
    const search = page.locator("#gallery-search");
    // by title, in another case
    await search.pressSequentially("NOTI");
    assert.deepEqual(await visibleEntries(page), ["notion"]);
    assert.equal(await page.textContent("#gallery-count"), `1 of ${FIRST_RUN.gallery.length} connectors match`);
    // by name only: "brave-search" has a hyphen its title does not
    await search.fill("brave-se");
    assert.deepEqual(await visibleEntries(page), ["brave-search"]);
    // by description: Jira is only in Atlassian's description
    await search.fill("jira");
    assert.deepEqual(await visibleEntries(page), ["atlassian"]);
    // a word in several descriptions, as each letter is typed
    await search.fill("");
    await search.pressSequentially("pay");
    const expected = FIRST_RUN.gallery
      .filter((g) => [g.name, g.title, g.description ?? ""].some((x) => x.toLowerCase().includes("pay")))
      .map((g) => g.name);
    assert.ok(expected.includes("paypal") && expected.length >= 2, JSON.stringify(expected));
    assert.deepEqual(await visibleEntries(page), expected);
    // nothing matches: said so, with the list hidden
    await search.fill("zzzz-no-such");
    assert.deepEqual(await visibleEntries(page), []);
    assert.match(await page.textContent(".gallery__none"), /No connector matches “zzzz-no-such”/);
    assert.equal(await page.locator("#gallery-list").isVisible(), false);
    await search.fill("");
    assert.equal((await visibleEntries(page)).length, FIRST_RUN.gallery.length);
    await page.context.close();
  });

  test('"/" focuses the search, Esc closes the gallery (also from the search field)', async () => {
    const page = await open("fixture=first-run");
    await openGallery(page);
    await entry(page, "canva").locator("[data-control=enable]").focus();
    await page.keyboard.press("/");
    assert.equal((await active(page)).id, "gallery-search");
    assert.equal(await page.inputValue("#gallery-search"), "", "the slash is not typed");
    await page.keyboard.type("git");
    assert.deepEqual(await visibleEntries(page), ["git", "github"].filter((n) => FIRST_RUN.gallery.some((g) => g.name === n)));
    await page.keyboard.press("Escape");
    assert.equal(await page.locator("#gallery").isVisible(), false);
    assert.ok(await page.locator(".empty").isVisible());
    assert.equal((await active(page)).control, "open-gallery");
    // reopened: a fresh search
    await page.keyboard.press("Enter");
    await page.waitForSelector("#gallery:not([hidden])");
    assert.equal(await page.inputValue("#gallery-search"), "");
    assert.equal((await visibleEntries(page)).length, FIRST_RUN.gallery.length);
    await page.getByRole("button", { name: "Back to your connectors" }).click();
    assert.equal(await page.locator("#gallery").isVisible(), false);
    await page.context.close();
  });

  test("Add on an OAuth entry: enable_connector, back to the list, the row highlighted with Authorize in focus", async () => {
    const page = await open("fixture=first-run");
    await openGallery(page);
    await page.getByRole("button", { name: "Add Notion" }).click();
    await page.waitForSelector('li[data-connector="notion"]');
    assert.deepEqual(await calls(page, "enable_connector"), [{ name: "notion" }]);
    assert.equal(await page.locator("#gallery").isVisible(), false);
    assert.deepEqual(await rowNames(page), ["notion"]);
    const notion = row(page, "notion");
    assert.equal(await notion.getAttribute("data-state"), "needs_authorization");
    assert.match(await notion.getAttribute("class"), /row--highlight/);
    assert.deepEqual(
      { control: (await active(page)).control, row: (await active(page)).row, text: (await active(page)).text },
      { control: "primary", row: "notion", text: "Authorize" },
    );
    assert.match(await notion.locator(".notice--info").textContent(), /Authorize it to finish/);
    // the count is the connector's own business now
    assert.equal(await page.textContent(".summary"), "1 needs attention, listed first");
    // Enter on the focused Authorize walks on to the sign-in
    await page.keyboard.press("Enter");
    await page.waitForFunction(() => window.__patchbayMock.calls.some((c) => c.cmd === "start_authorization"));
    assert.deepEqual(await calls(page, "start_authorization"), [{ name: "notion" }]);
    // it is no longer offered
    await openGallery(page, "header [data-control=open-gallery]");
    assert.equal(await entry(page, "notion").count(), 0);
    assert.equal(await page.textContent("#gallery-count"), `${FIRST_RUN.gallery.length - 1} connectors to add`);
    assert.deepEqual(page.errors, []);
    await page.context.close();
  });

  test("Add on an entry that needs a key: the row's field for that key has the focus", async () => {
    const page = await open("fixture=first-run");
    await openGallery(page);
    await page.locator("#gallery-search").fill("context");
    await page.getByRole("button", { name: "Add Context7" }).click();
    await page.waitForSelector('li[data-connector="context7"]');
    const a = await active(page);
    assert.equal(a.row, "context7");
    assert.equal(a.control, "key-value");
    const label = await page.evaluate(() => document.activeElement.getAttribute("aria-label"));
    assert.equal(label, "Value of CONTEXT7_API_KEY");
    assert.equal(await page.evaluate(() => document.activeElement.type), "password");
    assert.match(await row(page, "context7").locator(".keys__cli").textContent(), /patchbay secret set CONTEXT7_API_KEY/);
    assert.match(await row(page, "context7").locator(".notice--info").textContent(), /Enter its key below to finish/);
    await page.context.close();
  });

  test("Add on an entry that needs nothing: the row itself has the focus, Ready to use", async () => {
    const page = await open("fixture=first-run");
    await openGallery(page);
    await page.getByRole("button", { name: "Add Memory" }).click();
    await page.waitForSelector('li[data-connector="memory"]');
    const a = await active(page);
    assert.equal(a.row, "memory");
    assert.equal(a.control, null);
    assert.equal(await row(page, "memory").getAttribute("data-state"), "no_credential_required");
    assert.equal(await page.textContent(".summary"), "The one connector is ready");
    await page.context.close();
  });

  test("the tray asking for a row closes the gallery and focuses that row", async () => {
    const page = await open("fixture=found");
    await openGallery(page, "header [data-control=open-gallery]");
    await page.evaluate(() => window.__patchbayMock.focusConnector("sentry"));
    await page.waitForSelector("#gallery[hidden]", { state: "attached" });
    assert.ok(await page.locator(".connectors").isVisible());
    assert.equal((await active(page)).row, "sentry");
    assert.ok(await page.locator("header [data-control=open-gallery]").isVisible());
    await page.context.close();
  });

  test("authorizing a catalog entry not in use (tray, patchbay://authorize/NAME) opens the gallery on it", async () => {
    const page = await open("fixture=found");
    await page.evaluate(() => window.__patchbayMock.authorizeConnector("asana"));
    await page.waitForSelector("#gallery:not([hidden])");
    assert.equal(await page.inputValue("#gallery-search"), "asana");
    assert.deepEqual(await visibleEntries(page), ["asana"]);
    assert.equal((await active(page)).entry, "asana");
    assert.deepEqual(await calls(page, "start_authorization"), []);
    // Enter adds it, and its Authorize is next
    await page.keyboard.press("Enter");
    await page.waitForSelector('li[data-connector="asana"]');
    assert.equal((await active(page)).text, "Authorize");
    // a name nothing knows still says so
    await page.evaluate(() => window.__patchbayMock.authorizeConnector("nope"));
    await page.waitForSelector('[data-banner="request-error"]');
    await page.context.close();
  });

  test("the header's Add connector is not offered while the status cannot be read", async () => {
    const page = await open("fixture=first-run&fail=get_status");
    await page.waitForSelector(".error-box");
    assert.equal(await page.locator("header [data-control=open-gallery]").isVisible(), false);
    await page.click("text=Retry");
    await page.waitForSelector(".empty:not([hidden])");
    assert.ok(await page.locator("header [data-control=open-gallery]").isVisible());
    await page.context.close();
  });

  test("a rejected enable_connector shows inline on the entry; the gallery stays open", async () => {
    const page = await open("fixture=first-run&fail=enable_connector");
    await openGallery(page);
    await page.getByRole("button", { name: "Add Linear" }).click();
    await entry(page, "linear").locator(".gentry__error").waitFor();
    assert.match(await entry(page, "linear").locator(".gentry__error").textContent(), /Permission denied/);
    assert.equal(await entry(page, "linear").locator(".gentry__error").getAttribute("role"), "alert");
    assert.ok(await page.locator("#gallery").isVisible());
    assert.equal((await active(page)).entry, "linear");
    assert.deepEqual(await rowNames(page), []);
    await page.context.close();
  });

  test("a hidden entry (enabled: false) says so, and Add puts it back in use", async () => {
    const page = await open("fixture=found");
    await openGallery(page, "header [data-control=open-gallery]");
    const paypal = entry(page, "paypal");
    assert.equal(await paypal.locator(".gentry__hidden").textContent(), "Hidden (enabled: false)");
    assert.equal(await entry(page, "asana").locator(".gentry__hidden").count(), 0);
    await page.getByRole("button", { name: "Add back PayPal" }).click();
    await page.waitForSelector('li[data-connector="paypal"]');
    assert.deepEqual(await calls(page, "enable_connector"), [{ name: "paypal" }]);
    assert.equal((await active(page)).text, "Authorize");
    await page.context.close();
  });
});

describe("rows found in clients", () => {
  test('"Found in Cursor, Claude Code": display names, each client once, files in the tooltip', async () => {
    const page = await open("fixture=found");
    const notion = row(page, "notion");
    assert.equal(FOUND.connectors.find((c) => c.name === "notion").found_in.length, 3, "two Cursor files, one Claude Code");
    assert.equal(await notion.locator(".row__found").textContent(), "Found in Cursor, Claude Code");
    const tip = await notion.locator(".row__found").getAttribute("title");
    assert.match(tip, /\/home\/me\/src\/app\/\.cursor\/mcp\.json/);
    assert.match(tip, /Claude Code: \/home\/me\/\.claude\.json \(as “Notion”\)/);
    assert.equal(await row(page, "team-tracker").locator(".row__found").textContent(), "Found in Claude Desktop, Windsurf");
    assert.equal(await row(page, "local-db").locator(".row__found").textContent(), "Found in VS Code, Gemini CLI");
    assert.equal(await row(page, "linear").locator(".row__found").count(), 0);
    // the row's description for assistive tech includes it
    const described = await notion.getAttribute("aria-describedby");
    assert.ok(described.split(" ").includes(await notion.locator(".row__found").getAttribute("id")));
    await page.context.close();
  });

  test("the credential's source: Claude Code, Codex, mcp-remote; nothing said for Patchbay's own", async () => {
    const page = await open("fixture=found");
    assert.equal(await row(page, "notion").locator(".row__credsource").textContent(), "Credential from Claude Code");
    assert.equal(await row(page, "sentry").locator(".row__credsource").textContent(), "Credential from Codex");
    assert.equal(await row(page, "team-tracker").locator(".row__credsource").textContent(), "Credential from mcp-remote");
    assert.equal(await row(page, "local-db").locator(".row__credsource").count(), 0);
    // authorized in Patchbay: no line
    const next = structuredClone(FOUND);
    next.connectors.find((c) => c.name === "notion").credential_source = "patchbay";
    await page.evaluate((r) => window.__patchbayMock.emitStatus(r), next);
    await page.waitForFunction(() => !document.querySelector('li[data-connector="notion"] .row__credsource'));
    assert.equal(await row(page, "sentry").locator(".row__credsource").count(), 1);
    await page.context.close();
  });

  test("Manage with Patchbay only on client-only rows; it calls manage_connector and the offer goes", async () => {
    const page = await open("fixture=found");
    const owners = await page.$$eval("[data-control=manage]", (bs) => bs.map((b) => b.closest("li").dataset.connector));
    assert.deepEqual(owners, FOUND.connectors.filter((c) => c.origin === "client").map((c) => c.name));
    assert.deepEqual(owners.sort(), ["local-db", "team-tracker"]);
    await row(page, "team-tracker").getByRole("button", { name: "Manage with Patchbay" }).click();
    await page.waitForFunction(() => !document.querySelector('li[data-connector="team-tracker"] [data-control=manage]'));
    assert.deepEqual(await calls(page, "manage_connector"), [{ name: "team-tracker" }]);
    assert.match(
      await row(page, "team-tracker").locator(".notice--info").textContent(),
      /Patchbay manages team-tracker now: it is in \/home\/me\/\.config\/patchbay\/mcp\.json/,
    );
    // still found where it was, still its adopted credential
    assert.equal(await row(page, "team-tracker").locator(".row__found").textContent(), "Found in Claude Desktop, Windsurf");
    assert.equal(await row(page, "local-db").locator("[data-control=manage]").count(), 1);
    await page.context.close();
  });

  test("a rejected manage_connector shows inline and keeps the offer", async () => {
    const page = await open("fixture=found&fail=manage_connector");
    await row(page, "local-db").locator("[data-control=manage]").click();
    await row(page, "local-db").locator(".notice--error").waitFor();
    assert.match(await row(page, "local-db").locator(".notice--error").textContent(), /Permission denied/);
    assert.equal(await row(page, "local-db").locator("[data-control=manage]").textContent(), "Manage with Patchbay");
    await page.context.close();
  });

  test("Remove from my connectors on enabled rows: disable_connector, the row goes back to the gallery, hidden", async () => {
    const page = await open("fixture=found");
    const owners = await page.$$eval("[data-control=remove]", (bs) => bs.map((b) => b.closest("li").dataset.connector));
    assert.deepEqual(owners, FOUND.connectors.filter((c) => c.in_use_because.includes("enabled")).map((c) => c.name));
    assert.deepEqual(owners, ["linear"]);
    assert.equal(await page.textContent(".summary"), "1 needs attention, listed first");
    await row(page, "linear").getByRole("button", { name: "Remove from my connectors" }).click();
    await page.waitForFunction(() => !document.querySelector('li[data-connector="linear"]'));
    assert.deepEqual(await calls(page, "disable_connector"), [{ name: "linear" }]);
    assert.equal(await page.textContent(".summary"), `All ${FOUND.connectors.length - 1} connectors ready`);
    assert.notEqual((await active(page)).row, null, "the focus moved to a neighbouring row");
    await openGallery(page, "header [data-control=open-gallery]");
    assert.equal(await entry(page, "linear").locator(".gentry__hidden").textContent(), "Hidden (enabled: false)");
    assert.equal(await entry(page, "linear").locator(".gentry__needs").textContent(), "Sign in");
    await page.context.close();
  });

  test("removing the last connector leaves the first-run view with the focus on Add connector", async () => {
    const page = await open("fixture=first-run");
    await openGallery(page);
    await page.getByRole("button", { name: "Add Fetch" }).click();
    await page.waitForSelector('li[data-connector="fetch"]');
    await row(page, "fetch").locator("[data-control=remove]").click();
    await page.waitForSelector(".empty:not([hidden])");
    assert.equal(await page.textContent(".summary"), "No connectors in use");
    const a = await active(page);
    assert.equal(a.control, "open-gallery");
    assert.deepEqual(await calls(page, "disable_connector"), [{ name: "fetch" }]);
    await page.context.close();
  });
});

describe("the real CLI's reports in the window", () => {
  const CLI = JSON.parse(readFileSync(new URL("./fixtures/cli-status.json", import.meta.url), "utf8"));

  test("a home with servers in several clients (tests/fixtures/cli-status.json, from patchbay status --json)", async () => {
    const page = await open("fixture=empty");
    await page.evaluate((r) => window.__patchbayMock.emitStatus(r), CLI);
    await page.waitForSelector("li[data-connector]");
    assert.deepEqual(await rowNames(page), CLI.connectors.map((c) => c.name));
    // notion: Claude Code's ~/.claude.json, Cursor's user file and a project's: two clients
    assert.equal(await row(page, "notion").locator(".row__found").textContent(), "Found in Claude Code, Cursor");
    const clientOnly = CLI.connectors.filter((c) => c.origin === "client").map((c) => c.name);
    assert.ok(clientOnly.length >= 2, JSON.stringify(clientOnly));
    const manage = await page.$$eval("[data-control=manage]", (bs) => bs.map((b) => b.closest("li").dataset.connector));
    assert.deepEqual(manage, clientOnly);
    // `patchbay enable linear` made it removable; `patchbay disable paypal` hid it
    const remove = await page.$$eval("[data-control=remove]", (bs) => bs.map((b) => b.closest("li").dataset.connector));
    assert.deepEqual(remove, ["linear"]);
    await openGallery(page, "header [data-control=open-gallery]");
    assert.deepEqual(await visibleEntries(page), CLI.gallery.map((g) => g.name));
    assert.equal(await entry(page, "paypal").locator(".gentry__hidden").textContent(), "Hidden (enabled: false)");
    assert.equal(await entry(page, "brave-search").locator(".gentry__needs").textContent(), "Needs an API key: BRAVE_API_KEY");
    assert.deepEqual(page.errors, []);
    await page.context.close();
  });

  test("a fresh install from the live CLI: the first-run view, and the gallery the mock serves matches it", async (t) => {
    const bin = patchbayBinFor(t);
    if (!bin) return;
    const fresh = cliStatus(bin, { clean: true });
    assert.deepEqual(fresh.connectors, []);
    assert.equal(fresh.need_attention, 0);
    // The first-run fixture's gallery is what the CLI answers (scripts/gallery-fixtures.mjs).
    assert.deepEqual(FIRST_RUN.gallery, fresh.gallery, "regenerate it: node scripts/gallery-fixtures.mjs");
    const page = await open("fixture=mixed");
    await page.evaluate((r) => window.__patchbayMock.emitStatus(r), fresh);
    await page.waitForSelector(".empty:not([hidden])");
    assert.deepEqual(await rowNames(page), []);
    assert.equal(await page.textContent(".summary"), "No connectors in use");
    await openGallery(page);
    assert.equal(await page.textContent("#gallery-count"), `${fresh.gallery.length} connectors to add`);
    await page.context.close();
  });
});
