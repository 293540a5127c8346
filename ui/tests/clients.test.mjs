// Browser tests of issue 12 in the Connectors window: "Use in another client" (Add to Cursor /
// VS Code / Claude Desktop / Windsurf, stdio or the gateway, Replace for a foreign entry),
// "Switch CLIENT to Patchbay" for mcp-remote entries, and the Gateway clients section with its
// two-step Revoke. Against the mock backend (src/fixtures/clients/mixed.json).

import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { mockCalls, windowSuite } from "./harness.mjs";

const fixture = (name) => JSON.parse(readFileSync(new URL(`../src/fixtures/${name}.json`, import.meta.url), "utf8"));
const MIXED = fixture("mixed");
const CLIENTS = fixture("clients/mixed");

const suite = windowSuite();

async function open(query = "fixture=mixed") {
  // The clients are fetched after the first render.
  return suite.open(query, { waitFor: "#app[data-clients=loaded]" });
}

const calls = mockCalls;
const row = (page, name) => page.locator(`li[data-connector="${name}"]`);

async function openMenu(page, name) {
  await row(page, name).locator("details[data-drawer=clients] summary").click();
}

/** The confirmation a write to a client's config asks first: its text, then Confirm. */
async function confirmWrite(page) {
  const dialog = page.locator("#write-confirm[open]");
  await dialog.waitFor();
  const text = await dialog.textContent();
  await dialog.locator("[data-control=write-confirm]").click();
  await page.locator("#write-confirm").waitFor({ state: "detached" });
  return text;
}

const addButtons = (page, name) =>
  row(page, name)
    .locator("[data-control=add-client]")
    .evaluateAll((els) => els.map((e) => [e.dataset.client, e.dataset.via, e.textContent]));

describe("Use in another client", () => {
  test("offered on remote rows only, for the clients found on this machine", async () => {
    const page = await open();
    const remote = MIXED.connectors.filter((c) => c.transport !== "stdio" && c.transport !== "unknown").map((c) => c.name);
    const withMenu = await page.$$eval("li[data-connector]:has(details[data-drawer=clients])", (els) => els.map((e) => e.dataset.connector));
    assert.deepEqual(withMenu, remote);
    assert.ok(MIXED.connectors.some((c) => c.transport === "stdio"), "the fixture has a stdio row");
    await openMenu(page, "linear");
    const found = CLIENTS.targets.filter((t) => t.found);
    assert.deepEqual(
      await addButtons(page, "linear"),
      found.map((t) => [t.client, "stdio", `Add to ${t.display_name}`]),
    );
    assert.ok(!found.some((t) => t.client === "windsurf"), "Windsurf is not on this machine");
    assert.deepEqual(page.errors, []);
  });

  test("no client found: no menu at all", async () => {
    const page = await open("fixture=mixed&clients=none");
    assert.equal(await page.locator("#gateway-clients").isHidden(), false);
    assert.equal(await page.locator("details[data-drawer=clients]").count(), 0);
  });

  test("Add via patchbay connect (the default): the file written, the backup the first time only", async () => {
    const page = await open();
    await openMenu(page, "linear");
    await row(page, "linear").locator('[data-control=add-client][data-client=vscode]').click();
    await confirmWrite(page);
    const notice = row(page, "linear").locator(".notice--info");
    await notice.waitFor();
    assert.deepEqual(await calls(page, "add_to_client"), [{ client: "vscode", name: "linear", via: "stdio", replace: false }]);
    const text = await notice.textContent();
    assert.match(text, /Added linear to VS Code \(\/home\/me\/\.config\/Code\/User\/mcp\.json\)\./);
    assert.match(text, /runs patchbay connect/);
    assert.match(text, /saved in \/home\/me\/\.config\/Code\/User\/mcp\.json\.patchbay-backup/);
    assert.match(text, /Restart VS Code/);
    // The menu stays open across the re-render; a second write to the same file makes no backup.
    assert.equal(await row(page, "linear").locator("details[data-drawer=clients]").evaluate((d) => d.open), true);
    await openMenu(page, "slack");
    await row(page, "slack").locator('[data-control=add-client][data-client=vscode]').click();
    await confirmWrite(page);
    const second = row(page, "slack").locator(".notice--info");
    await second.waitFor();
    assert.match(await second.textContent(), /Added slack to VS Code/);
    assert.doesNotMatch(await second.textContent(), /saved in/);
    // The same again: nothing changes.
    await row(page, "slack").locator('[data-control=add-client][data-client=vscode]').click();
    await page.waitForFunction(() => /already has slack/.test(document.querySelector('li[data-connector="slack"] .notice--info')?.textContent ?? ""));
    assert.doesNotMatch(await second.textContent(), /Restart/);
    assert.deepEqual(page.errors, []);
  });

  test("through the gateway: the radio keeps its focus, Claude Desktop still gets stdio, a gateway client is minted", async () => {
    const page = await open();
    await openMenu(page, "sentry");
    const radio = row(page, "sentry").locator('[data-control=via][value=gateway]');
    await radio.focus();
    await page.keyboard.press("Space");
    await page.waitForFunction(() => document.querySelector('li[data-connector="sentry"] [data-control=add-client]')?.dataset.via === "gateway");
    assert.equal(await page.evaluate(() => document.activeElement?.value), "gateway");
    assert.deepEqual(
      (await addButtons(page, "sentry")).map(([client, via]) => [client, via]),
      [["cursor", "gateway"], ["vscode", "gateway"], ["claude-desktop", "stdio"]],
    );
    assert.match(await row(page, "sentry").locator(".clients__note").textContent(), /Claude Desktop only launches commands/);
    await row(page, "sentry").locator('[data-control=add-client][data-client=cursor]').click();
    await confirmWrite(page);
    const notice = row(page, "sentry").locator(".notice--info");
    await notice.waitFor();
    assert.deepEqual(await calls(page, "add_to_client"), [{ client: "cursor", name: "sentry", via: "gateway", replace: false }]);
    assert.match(await notice.textContent(), /through the gateway with its own secret\. Gateway client “cursor” created for it\./);
    await page.waitForSelector('li[data-gateway-client="cursor"]');
    assert.match(await page.textContent('li[data-gateway-client="cursor"]'), /All connectors in use/);
    assert.doesNotMatch(await page.textContent("body"), /pbgw_/);
    assert.deepEqual(page.errors, []);
  });

  test("a same-name entry that is not Patchbay's: the refusal inline, then Replace explicitly", async () => {
    const page = await open();
    await openMenu(page, "notion");
    await row(page, "notion").locator('[data-control=add-client][data-client=cursor]').click();
    const error = row(page, "notion").locator(".notice--error");
    await error.waitFor();
    assert.match(await error.textContent(), /already has a server named "notion" that is not Patchbay's \(stdio: npx -y @notionhq\/notion-mcp-server\)/);
    const replace = row(page, "notion").locator("[data-control=replace-entry]");
    assert.equal(await replace.textContent(), "Replace Cursor’s entry");
    assert.equal(await page.evaluate(() => document.activeElement?.dataset.control), "replace-entry");
    await replace.click();
    await confirmWrite(page);
    const done = row(page, "notion").locator(".notice--info");
    await done.waitFor();
    // The refusal comes from the preview: nothing was written before Replace was confirmed.
    assert.deepEqual(await calls(page, "preview_add_to_client"), [
      { client: "cursor", name: "notion", via: "stdio", replace: false },
      { client: "cursor", name: "notion", via: "stdio", replace: true },
    ]);
    assert.deepEqual(await calls(page, "add_to_client"), [{ client: "cursor", name: "notion", via: "stdio", replace: true }]);
    assert.match(await done.textContent(), /Cursor’s “notion” now goes through Patchbay/);
    assert.equal(await row(page, "notion").locator(".notice--error").count(), 0);
  });

  test("a failed write shows inline, without a Replace offer", async () => {
    const page = await open("fixture=mixed&fail=add_to_client");
    await openMenu(page, "github");
    await row(page, "github").locator('[data-control=add-client][data-client=vscode]').click();
    await confirmWrite(page);
    const error = row(page, "github").locator(".notice--error");
    await error.waitFor();
    assert.match(await error.textContent(), /Permission denied/);
    assert.equal(await row(page, "github").locator("[data-control=replace-entry]").count(), 0);
    // The button is usable again.
    assert.equal(await row(page, "github").locator('[data-control=add-client][data-client=vscode]').textContent(), "Add to VS Code");
  });
});

describe("Switch CLIENT to Patchbay", () => {
  test("rows reached through npx mcp-remote offer it; one click switches, the result inline", async () => {
    const page = await open();
    const switches = () =>
      page.$$eval("[data-control=switch-entry]", (els) =>
        els.map((e) => [e.closest("li").dataset.connector, e.dataset.client, e.dataset.entry, e.textContent]),
      );
    assert.deepEqual(await switches(), [
      ["sentry", "claude-desktop", "Sentry", "Switch Claude Desktop to Patchbay"],
      ["linear", "cursor", "linear", "Switch Cursor to Patchbay"],
    ].sort((a, b) => MIXED.connectors.findIndex((c) => c.name === a[0]) - MIXED.connectors.findIndex((c) => c.name === b[0])));
    // The entry whose URL no connector has is not offered anywhere.
    assert.ok(CLIENTS.candidates.some((c) => c.connector === null));
    await row(page, "linear").locator("[data-control=switch-entry]").click();
    await confirmWrite(page);
    const notice = row(page, "linear").locator(".notice--info");
    await notice.waitFor();
    assert.deepEqual(await calls(page, "switch_client_entry"), [{ client: "cursor", server: "linear" }]);
    assert.match(await notice.textContent(), /Cursor’s “linear” now goes through Patchbay \(\/home\/me\/\.cursor\/mcp\.json\)\..*runs patchbay connect/);
    await page.waitForFunction(() => !document.querySelector('li[data-connector="linear"] [data-control=switch-entry]'));
    assert.equal(await page.evaluate(() => document.activeElement?.dataset.connector), "linear");
    assert.deepEqual(page.errors, []);
  });

  test("the switch asks first with the entry before and after; Cancel writes nothing and gives focus back", async () => {
    const page = await open();
    const button = row(page, "linear").locator("[data-control=switch-entry]");
    await button.click();
    const dialog = page.locator("#write-confirm[open]");
    await dialog.waitFor();
    assert.equal(await page.locator("#write-confirm-title").textContent(), "Switch Cursor’s “linear” to Patchbay?");
    assert.match(await dialog.textContent(), /changes this one entry in \/home\/me\/\.cursor\/mcp\.json/);
    assert.match(await dialog.locator("[data-part=before] pre").textContent(), /mcp-remote/);
    assert.match(await dialog.locator("[data-part=after] pre").textContent(), /"connect",\s*"linear"/);
    // Cancel is where focus starts: Enter on an open dialog does not write.
    assert.equal(await page.evaluate(() => document.activeElement?.dataset.control), "write-cancel");
    await page.keyboard.press("Escape");
    await page.locator("#write-confirm").waitFor({ state: "detached" });
    assert.deepEqual(await calls(page, "switch_client_entry"), []);
    assert.equal(await page.evaluate(() => document.activeElement?.dataset.control), "switch-entry");
    assert.equal(await button.textContent(), "Switch Cursor to Patchbay");
    // Cancel, the button, does the same.
    await button.click();
    await page.locator("#write-confirm [data-control=write-cancel]").click();
    await page.locator("#write-confirm").waitFor({ state: "detached" });
    assert.deepEqual(await calls(page, "switch_client_entry"), []);
    assert.deepEqual(page.errors, []);
  });

  test("the preview's warning is said in the confirmation, and only then", async () => {
    // The warning is the backend's (client_config::not_ready_warning, connect_warning; tested in
    // src-tauri/crates/gateway/tests/client_writes.rs): the window shows what it is given.
    const page = await open();
    const warning = page.locator("#write-confirm [data-part=warning]");
    await row(page, "linear").locator("[data-control=switch-entry]").click();
    await page.locator("#write-confirm[open]").waitFor();
    assert.equal(await warning.count(), 0);
    await page.keyboard.press("Escape");
    await page.locator("#write-confirm").waitFor({ state: "detached" });
    const said = "Sentry is not ready in Patchbay yet (needs authorization): Claude Desktop will see it fail until it is.";
    const preview = {
      client: "claude-desktop",
      client_name: "Claude Desktop",
      name: "Sentry",
      connector: "sentry",
      file: "/home/me/.config/Claude/claude_desktop_config.json",
      before: '"Sentry": {\n  "command": "npx"\n}',
      after: '"Sentry": {\n  "command": "/usr/bin/patchbay"\n}',
      change: "replaced",
      via: "stdio",
      warning: said,
    };
    await page.evaluate((p) => window.__patchbayMock.nextResult("preview_switch_client_entry", p), preview);
    await row(page, "sentry").locator("[data-control=switch-entry]").click();
    await page.locator("#write-confirm[open]").waitFor();
    assert.equal(await warning.textContent(), said);
  });

  test("Undo in the notice puts the entry back: the switch is offered again", async () => {
    const page = await open();
    await row(page, "linear").locator("[data-control=switch-entry]").click();
    await confirmWrite(page);
    const undo = row(page, "linear").locator("[data-control=undo-write]");
    await undo.waitFor();
    await page.waitForFunction(() => !document.querySelector('li[data-connector="linear"] [data-control=switch-entry]'));
    await undo.click();
    const notice = row(page, "linear").locator(".notice--info");
    await page.waitForFunction(() => /back as it was/.test(document.querySelector('li[data-connector="linear"] .notice--info')?.textContent ?? ""));
    assert.match(await notice.textContent(), /Cursor’s config is back as it was \(\/home\/me\/\.cursor\/mcp\.json\)\./);
    const [switched] = await calls(page, "switch_client_entry");
    assert.ok(switched);
    assert.equal((await calls(page, "undo_client_write")).length, 1);
    await row(page, "linear").locator("[data-control=switch-entry]").waitFor();
    assert.equal(await row(page, "linear").locator("[data-control=undo-write]").count(), 0);
    assert.deepEqual(page.errors, []);
  });

  test("a refused switch shows inline and the button stays", async () => {
    const page = await open();
    await page.evaluate(() =>
      window.__patchbayMock.failNext("switch_client_entry", {
        kind: "client_config",
        message: '/home/me/.config/Claude/claude_desktop_config.json: "Sentry" does not run mcp-remote (stdio: node server.js); nothing was changed',
      }),
    );
    await row(page, "sentry").locator("[data-control=switch-entry]").click();
    await confirmWrite(page);
    const error = row(page, "sentry").locator(".notice--error");
    await error.waitFor();
    assert.match(await error.textContent(), /does not run mcp-remote/);
    assert.equal(await row(page, "sentry").locator("[data-control=switch-entry]").textContent(), "Switch Claude Desktop to Patchbay");
  });
});

describe("Gateway clients", () => {
  test("lists labels, scopes and ages with the gateway's URL, and never a secret or a hash", async () => {
    const page = await open();
    await page.waitForSelector("#gateway-clients:not([hidden]) li[data-gateway-client]");
    const rows = await page.$$eval("li[data-gateway-client]", (els) =>
      els.map((e) => [e.dataset.gatewayClient, e.querySelector(".row__meta").textContent]),
    );
    assert.deepEqual(rows, [
      ["vscode", "All connectors in use · created 43 h ago"],
      ["ci-runner", "Only GitHub, Sentry · created 1 h ago"],
    ]);
    assert.equal(await page.textContent("#gateway-title .section-count"), "2");
    assert.match(await page.textContent("#gateway-note"), /http:\/\/127\.0\.0\.1:3119\/mcp/);
    const body = await page.textContent("body");
    assert.doesNotMatch(body, /pbgw_|sha256|[0-9a-f]{64}/);
  });

  test("Revoke asks to confirm; Escape, a click elsewhere and the timeout cancel; Confirm revokes", async () => {
    const page = await open();
    await page.waitForSelector('li[data-gateway-client="vscode"]');
    const btn = (label) => page.locator(`li[data-gateway-client="${label}"] [data-control=revoke]`);
    await btn("vscode").click();
    assert.equal(await btn("vscode").textContent(), "Confirm revoke");
    await page.keyboard.press("Escape");
    assert.equal(await btn("vscode").textContent(), "Revoke");
    await btn("vscode").click();
    await page.click("#gateway-note");
    assert.equal(await btn("vscode").textContent(), "Revoke");
    await btn("vscode").click();
    await page.waitForFunction(
      () => document.querySelector('li[data-gateway-client="vscode"] [data-control=revoke]')?.textContent === "Revoke",
      null,
      { timeout: 8000 },
    );
    assert.deepEqual(await calls(page, "revoke_gateway_client"), []);

    await btn("vscode").click();
    await btn("vscode").click();
    await page.waitForSelector('li[data-gateway-client="vscode"]', { state: "detached" });
    assert.deepEqual(await calls(page, "revoke_gateway_client"), [{ label: "vscode" }]);
    assert.equal(await page.textContent("#gateway-title .section-count"), "1");
    assert.equal(
      await page.evaluate(() => document.activeElement?.closest("li")?.dataset.gatewayClient),
      "ci-runner",
      "the focus moves to the next client's Revoke",
    );
    await btn("ci-runner").click();
    await btn("ci-runner").click();
    await page.waitForSelector(".gateway__none");
    assert.match(await page.textContent(".gateway__none"), /No gateway clients yet/);
    assert.deepEqual(page.errors, []);
  });

  test("a failed revoke shows in the section and keeps the client", async () => {
    const page = await open();
    await page.waitForSelector('li[data-gateway-client="ci-runner"]');
    await page.evaluate(() =>
      window.__patchbayMock.failNext("revoke_gateway_client", {
        kind: "gateway_clients",
        message: "cannot write /home/me/.local/share/patchbay/gateway-clients.json: Read-only file system (os error 30)",
      }),
    );
    const btn = page.locator('li[data-gateway-client="ci-runner"] [data-control=revoke]');
    await btn.click();
    await btn.click();
    await page.waitForSelector("#gateway-clients .notice--error");
    assert.match(await page.textContent("#gateway-clients .notice--error"), /Read-only file system/);
    assert.equal(await btn.textContent(), "Revoke");
    assert.equal(await page.locator("li[data-gateway-client]").count(), 2);
  });

  test("an unreadable registry says so in the section", async () => {
    const page = await open("fixture=mixed&fail=gateway_clients");
    assert.equal(await page.locator("#gateway-clients .notice--error").count(), 1);
    assert.match(await page.textContent("#gateway-clients .notice--error"), /is not a gateway clients file/);
    assert.equal(await page.locator("li[data-gateway-client]").count(), 0);
  });

  test("not on the first run, with nothing to list", async () => {
    const page = await open("fixture=first-run");
    assert.deepEqual((await calls(page, "gateway_clients")).length, 1);
    assert.equal(await page.locator("#gateway-clients").isHidden(), true);
  });
});
