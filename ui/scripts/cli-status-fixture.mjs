// Writes tests/fixtures/cli-status.json and tests/fixtures/cli-clients.json (issue 12: `switch
// --list --json` and `gateway client list --json`): what the real `patchbay status --json` answers in a home
// with servers in several clients (tests/cli-status.mjs). tests/types-drift.test.mjs checks it,
// and a live run when the CLI is built, against src/types.ts.
// Usage: node scripts/cli-status-fixture.mjs (PATCHBAY_BIN=/path/to/patchbay, else target/debug).

import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { cliClients, cliStatus, patchbayBin } from "../tests/cli-status.mjs";

const bin = patchbayBin();
if (!bin) throw new Error("no patchbay binary: build it (cargo build -p patchbay-cli) or set PATCHBAY_BIN");
const out = fileURLToPath(new URL("../tests/fixtures/cli-status.json", import.meta.url));
// The throwaway home's path reads as /home/me (only the keys and shapes matter to the test).
const text = JSON.stringify(cliStatus(bin), null, 2).replace(/\/[^"]*?patchbay-ui-status-[A-Za-z0-9]+/g, "/home/me");
writeFileSync(out, text + "\n");
console.log(`wrote ${out} from ${bin}`);

const clientsOut = fileURLToPath(new URL("../tests/fixtures/cli-clients.json", import.meta.url));
const clientsText = JSON.stringify(cliClients(bin), null, 2).replace(/\/[^"]*?patchbay-ui-clients-[A-Za-z0-9]+/g, "/home/me");
writeFileSync(clientsOut, clientsText + "\n");
console.log(`wrote ${clientsOut} from ${bin}`);
