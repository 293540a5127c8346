// "Start at login" in the Connectors window (issue 13): off by default, a change calls
// set_launch_at_login with the new value and shows what it answered, a failed change puts the
// switch back and says why, and a setting that cannot be read says so. Real Chromium against the
// built window with the mock backend (mock.ts: `login=on`, `fail=get_launch_at_login`,
// `fail=set_launch_at_login`; its calls and `launchAtLogin` in `window.__patchbayMock`). The Rust
// side, the login item appearing and going, is tested in patchbay-core's autostart/, through the
// real window's switch in tests/tests/window_webdriver.rs, and through `patchbay autostart` in
// src-tauri/crates/cli/tests/autostart.rs (and under wine, scripts/ci/windows.sh).

import { test } from "node:test";
import assert from "node:assert/strict";
import { windowSuite } from "./harness.mjs";

const { open } = windowSuite();

const SWITCH = "#launch-at-login";
// The mock's setting and the Start at login calls it got, in order.
const standIn = (page) =>
  page.evaluate(() => ({
    enabled: window.__patchbayMock.launchAtLogin,
    calls: window.__patchbayMock.calls.filter((c) => c.cmd.endsWith("_launch_at_login")),
  }));
const ready = (page) => page.waitForSelector(`${SWITCH}:not([disabled])`);

test("off by default; turning it on and off calls the command and shows its answer", async () => {
  const page = await open("fixture=mixed");
  await ready(page);
  const sw = page.locator(SWITCH);
  assert.equal(await sw.getAttribute("role"), "switch");
  assert.equal(await page.getByRole("switch", { name: "Start at login" }).count(), 1);
  assert.equal(await sw.isChecked(), false, "off by default");
  // In the window's footer, after the connectors in the tab order.
  assert.equal(await page.locator(`footer.settings-footer ${SWITCH}`).count(), 1);
  assert.equal(
    await page.evaluate(() => document.querySelector("main.scroller").nextElementSibling?.className),
    "settings-footer",
  );

  let state = await standIn(page);
  assert.deepEqual(state.calls, [{ cmd: "get_launch_at_login", args: {} }], "read once, not written");

  await sw.click();
  await ready(page);
  assert.equal(await sw.isChecked(), true);
  state = await standIn(page);
  assert.equal(state.enabled, true);
  assert.deepEqual(state.calls.at(-1), { cmd: "set_launch_at_login", args: { enabled: true } });
  assert.equal(await page.textContent("#announcer"), "Patchbay will start at login");

  await page.keyboard.press("Space"); // focus stayed on the switch
  await ready(page);
  assert.equal(await sw.isChecked(), false);
  state = await standIn(page);
  assert.equal(state.enabled, false);
  assert.deepEqual(state.calls.at(-1), { cmd: "set_launch_at_login", args: { enabled: false } });
  assert.equal(await page.isHidden("#launch-at-login-problem"), true);
  assert.deepEqual(page.errors, []);
  await page.context.close();
});

test("an entry already there shows as on", async () => {
  const page = await open("fixture=mixed&login=on");
  await ready(page);
  assert.equal(await page.locator(SWITCH).isChecked(), true);
  await page.context.close();
});

test("a change that fails puts the switch back and says why", async () => {
  const page = await open("fixture=mixed&fail=set_launch_at_login");
  await ready(page);
  const sw = page.locator(SWITCH);
  await sw.click();
  await ready(page);
  assert.equal(await sw.isChecked(), false, "back to off");
  const problem = page.locator("#launch-at-login-problem");
  assert.equal(await problem.isVisible(), true);
  assert.equal(
    await problem.textContent(),
    "Could not turn on Start at login: cannot write /home/me/.config/autostart/Patchbay.desktop: /home/me/.config is a file, not a directory",
  );
  assert.equal(await sw.getAttribute("aria-describedby"), "launch-at-login-problem");
  assert.equal((await standIn(page)).enabled, false);
  await page.context.close();
});

test("a setting that cannot be read is shown as unavailable, not as off", async () => {
  const page = await open("fixture=mixed&fail=get_launch_at_login");
  const problem = page.locator("#launch-at-login-problem");
  await problem.waitFor({ state: "visible" });
  assert.equal(
    await problem.textContent(),
    "Start at login is unavailable: cannot read /home/me/.config/autostart/Patchbay.desktop: Permission denied (os error 13)",
  );
  assert.equal(await page.locator(SWITCH).isDisabled(), true);
  await page.context.close();
});
