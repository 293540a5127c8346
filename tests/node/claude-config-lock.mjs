// Takes the lock Claude Code 2.1.332 takes around each write of its config (`~/.claude.json`, or
// `$CLAUDE_CONFIG_DIR/.claude.json`): `proper-lockfile`'s lock (Claude Code bundles a
// reimplementation with the same on-disk protocol; this is the npm library itself) on the config
// file with `lockfilePath: "<config>.lock"` (the lock is that DIRECTORY), `realpath: false`, and
// proper-lockfile's default `stale` (its `saveConfigWithLock`, read in its binary). For
// tests/tests/claude_lock_interop.rs.
//
//   node claude-config-lock.mjs CONFIG [--hold MS] [--add NAME] [--events FILE]
//
// Lock (retrying like Claude Code's own loop, ~10 s in all); with --add, read CONFIG at once; wait
// MS (default 0); with --add, put `mcpServers.NAME` into what it read and replace the file as
// Claude Code does (temp file, rename); release. Events (`node:locking`, `node:locked`,
// `node:wrote`, `node:releasing`, `node:released`) are appended to FILE, one a line. Exits 0, or 1
// when the lock cannot be taken, 3 when it was compromised (taken from us).
import { appendFileSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { randomBytes } from "node:crypto";
import lockfile from "proper-lockfile";

const args = process.argv.slice(2);
const config = args[0];
const option = (name, fallback) => {
  const i = args.indexOf(name);
  return i > 0 && i + 1 < args.length ? args[i + 1] : fallback;
};
const hold = Number(option("--hold", "0"));
const name = option("--add", null);
const eventsFile = option("--events", null);
if (!config) {
  console.error("usage: node claude-config-lock.mjs CONFIG [--hold MS] [--add NAME] [--events FILE]");
  process.exit(2);
}
const event = (line) => {
  if (eventsFile) appendFileSync(eventsFile, `${line}\n`);
};
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

event("node:locking");
let release;
try {
  release = await lockfile.lock(config, {
    lockfilePath: `${config}.lock`,
    realpath: false,
    retries: { retries: 10, minTimeout: 200, maxTimeout: 4000 },
    onCompromised: (error) => {
      event("node:compromised");
      console.error(`the lock was compromised: ${error.message}`);
      process.exitCode = 3;
    },
  });
} catch (error) {
  console.error(`cannot take the lock: ${error.code ?? ""} ${error.message}`);
  process.exit(1);
}
event("node:locked");
let root = null;
if (name) {
  try {
    root = JSON.parse(readFileSync(config, "utf8"));
  } catch (error) {
    if (error.code !== "ENOENT") throw error;
    root = {};
  }
}
if (hold > 0) await sleep(hold);
if (name) {
  root.mcpServers ??= {};
  root.mcpServers[name] = { type: "http", url: "http://127.0.0.1:1/mcp" };
  const tmp = `${config}.tmp.${process.pid}.${randomBytes(4).toString("hex")}`;
  writeFileSync(tmp, JSON.stringify(root, null, 2), { mode: 0o600, flag: "wx" });
  renameSync(tmp, config);
  event("node:wrote");
}
event("node:releasing");
await release();
event("node:released");
