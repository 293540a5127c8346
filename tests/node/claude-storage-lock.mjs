// Takes Claude Code's secure-storage write lock as Claude Code 2.1.332 takes it around each write
// to its credentials: `proper-lockfile`'s lock (Claude Code bundles a reimplementation with the
// same on-disk protocol; this is the npm library itself) on `<dir>/.storage-write` (the lock is
// the DIRECTORY `<dir>/.storage-write.lock`), with Claude Code's options. For
// tests/tests/claude_lock_interop.rs.
//
//   node claude-storage-lock.mjs DIR [--hold MS] [--write KEY] [--count N] [--events FILE]
//
// Each of N rounds (default 1): lock; with --write, read DIR/.credentials.json at once; wait MS
// (default 0); with --write, add the entry KEY (`{i}` in it replaced by the round's number) to
// `mcpOAuth` of what it read and replace the file as Claude Code does (temp file, rename);
// release. Reading at once and writing at the end of the hold is the widest window a writer that
// ignored the lock could fall into. Events (`node:locking`, `node:locked`, `node:wrote`,
// `node:releasing`, `node:released`, suffixed `#i` past the first round) are appended to FILE, one
// a line. Exits 0, or 1 when the lock cannot be taken, 3 when it was compromised (taken from us).
import { appendFileSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import lockfile from "proper-lockfile";

const args = process.argv.slice(2);
const dir = args[0];
const option = (name, fallback) => {
  const i = args.indexOf(name);
  return i > 0 && i + 1 < args.length ? args[i + 1] : fallback;
};
const hold = Number(option("--hold", "0"));
const key = option("--write", null);
const count = Number(option("--count", "1"));
const eventsFile = option("--events", null);
if (!dir) {
  console.error("usage: node claude-storage-lock.mjs DIR [--hold MS] [--write KEY] [--count N] [--events FILE]");
  process.exit(2);
}

const event = (name, round) => {
  const line = round > 0 ? `${name}#${round}` : name;
  if (eventsFile) appendFileSync(eventsFile, `${line}\n`);
};
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const credentials = join(dir, ".credentials.json");

// Claude Code 2.1.332: lock(I6() + "/.storage-write", {realpath: false, retries: {retries: 10,
// minTimeout: 100, maxTimeout: 1000}, stale: 15000, onCompromised}).
const options = {
  realpath: false,
  retries: { retries: 10, minTimeout: 100, maxTimeout: 1000 },
  stale: 15000,
  onCompromised: (error) => {
    event("node:compromised", 0);
    console.error(`the lock was compromised: ${error.message}`);
    process.exitCode = 3;
  },
};

for (let round = 0; round < count; round++) {
  event("node:locking", round);
  let release;
  try {
    release = await lockfile.lock(join(dir, ".storage-write"), options);
  } catch (error) {
    console.error(`cannot take the lock: ${error.code ?? ""} ${error.message}`);
    process.exit(1);
  }
  event("node:locked", round);
  let root = null;
  if (key) {
    try {
      root = JSON.parse(readFileSync(credentials, "utf8"));
    } catch (error) {
      if (error.code !== "ENOENT") throw error;
      root = {};
    }
  }
  if (hold > 0) await sleep(hold);
  if (key) {
    root.mcpOAuth ??= {};
    const name = key.replaceAll("{i}", String(round));
    root.mcpOAuth[name] = {
      serverName: name.split("|")[0],
      serverUrl: "http://127.0.0.1:1/mcp",
      accessToken: `node-at-${round}`,
      expiresAt: Date.now() + 3600 * 1000,
    };
    const tmp = `${credentials}.tmp.${randomBytes(4).toString("hex")}`;
    writeFileSync(tmp, JSON.stringify(root), { mode: 0o600, flag: "wx" });
    renameSync(tmp, credentials);
    event("node:wrote", round);
  }
  event("node:releasing", round);
  await release();
  event("node:released", round);
}
