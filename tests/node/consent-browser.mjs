// A person at Patchbay's consent page, in a real browser engine: Debian's chromium (headless,
// driven by playwright-core, no downloads) opens the authorization URL a client hands its
// "browser" (argv[2]), reads the page, answers it as PATCHBAY_CONSENT says, and waits until the
// browser has landed on the client's redirect URI (the client's own callback answered it).
//
//   PATCHBAY_CONSENT=allow (the default) | deny | only:NAME[,NAME]
//                    | window (click nothing: the request is answered in the Connectors window,
//                      and the page must follow that answer to the client by itself)
//   PATCHBAY_CONSENT_LOG=FILE   appends one JSON line: what the page showed and where it went
//
// Because a real engine does the clicking, the page's CSP (form-action, no script) and the
// Origin and Sec-Fetch-Site headers it sends are the browser's, not the test's.
import { chromium } from "playwright-core";
import { appendFileSync } from "node:fs";

const url = process.argv[2];
const answer = process.env.PATCHBAY_CONSENT ?? "allow";
const log = process.env.PATCHBAY_CONSENT_LOG;
const STEP = 30_000;

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
  headless: true,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
let seen = { url };
let page;
try {
  page = await browser.newPage();
  const violations = [];
  page.on("console", (m) => { if (/Content Security Policy/i.test(m.text())) violations.push(m.text()); });
  await page.goto(url, { timeout: STEP });
  seen.title = await page.title();
  seen.heading = await page.locator("h1").first().textContent();
  seen.text = await page.locator("body").innerText();
  seen.connectors = await page.locator('input[name="connector"]').evaluateAll(
    (boxes) => boxes.map((b) => b.value));
  const start = page.url();
  if (answer.startsWith("only:")) {
    const keep = new Set(answer.slice(5).split(",").filter(Boolean));
    await page.check('input[name="access"][value="some"]');
    for (const name of seen.connectors) {
      const box = page.locator(`input[name="connector"][value="${name}"]`);
      if (keep.has(name)) await box.check(); else await box.uncheck();
    }
  }
  const left = page.waitForURL((u) => !u.href.startsWith(start.split("?")[0]), { timeout: STEP });
  if (answer === "window") {
    await left;
  } else {
    // Click, then wait for the browser to leave the page for the redirect URI and load it.
    const button = answer === "deny" ? "Deny" : "Allow";
    await Promise.all([left, page.getByRole("button", { name: button }).click()]);
  }
  await page.waitForLoadState("load", { timeout: STEP });
  seen.landed = page.url();
  seen.csp_violations = violations;
} catch (e) {
  seen.error = String(e);
  seen.shown = await page?.locator("body").innerText().catch(() => "");
  process.exitCode = 1;
} finally {
  if (log) appendFileSync(log, JSON.stringify(seen) + "\n");
  await browser.close();
}
