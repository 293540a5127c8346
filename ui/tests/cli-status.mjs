// Runs the real `patchbay status --json` in a throwaway home that holds realistic client configs
// (Claude Code, Cursor user and project, VS Code, Claude Desktop, Windsurf) and a user catalog
// changed by the real `patchbay enable` / `patchbay disable`: the report the window is typed
// against (src/generated/ipc.ts, generated from the Rust types). Used by tests/types-drift.test.mjs and scripts/cli-status-fixture.mjs.

import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const REPO = fileURLToPath(new URL("../../", import.meta.url));

/** The CLI to run: PATCHBAY_BIN, else the workspace's debug build (under CARGO_TARGET_DIR when
 * set, as cargo puts it); null when there is none. */
export function patchbayBin() {
  const target = resolve(REPO, process.env.CARGO_TARGET_DIR ?? "target");
  const bin = process.env.PATCHBAY_BIN ?? join(target, "debug/patchbay");
  return existsSync(bin) ? bin : null;
}

/**
 * The CLI for a test that runs it: skipped when there is none, except inside scripts/test.sh
 * (PATCHBAY_TEST_INNER=1), where a missing CLI is a failure, not a quiet skip.
 */
export function patchbayBinFor(t) {
  const bin = patchbayBin();
  if (bin) return bin;
  const why = "no patchbay binary (cargo build -p patchbay-cli, or set PATCHBAY_BIN)";
  if (process.env.PATCHBAY_TEST_INNER === "1") throw new Error(`${why}; scripts/test.sh builds it first`);
  t.skip(why);
  return null;
}

function put(path, value) {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, typeof value === "string" ? value : JSON.stringify(value, null, 2));
}

/**
 * The status report of a home with servers in several clients (`clean: true`: a fresh install,
 * no client configured, nothing enabled); throws when the CLI fails.
 */
export function cliStatus(bin, { clean = false } = {}) {
  const home = mkdtempSync(join(tmpdir(), "patchbay-ui-status-"));
  try {
    const project = join(home, "src/app");
    mkdirSync(project, { recursive: true });
    if (!clean) writeClients(home, project);
    const env = {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: home,
      XDG_CONFIG_HOME: join(home, ".config"),
      XDG_DATA_HOME: join(home, ".local/share"),
      XDG_CACHE_HOME: join(home, ".cache"),
      XDG_RUNTIME_DIR: join(home, "run"),
      PATCHBAY_DATA_DIR: join(home, "patchbay"),
      PATCHBAY_DEFAULT_CATALOG: join(REPO, "catalog/mcp.json"),
      // No keychain here: the report says the store did not answer, which is part of the shape.
      DBUS_SESSION_BUS_ADDRESS: "disabled:",
    };
    mkdirSync(env.XDG_RUNTIME_DIR, { recursive: true, mode: 0o700 });
    const run = (args, okCodes = [0]) => {
      try {
        return execFileSync(bin, args, { cwd: project, env, encoding: "utf8", timeout: 30_000, stdio: ["ignore", "pipe", "pipe"] });
      } catch (err) {
        // `status` exits 1 when something needs attention: its output is still the report.
        if (okCodes.includes(err.status) && err.stdout) return err.stdout;
        throw new Error(`${bin} ${args.join(" ")} exited ${err.status}: ${err.stderr || err.message}`);
      }
    };
    if (!clean) {
      run(["enable", "linear"]);
      run(["disable", "paypal"]);
    }
    return JSON.parse(run(["status", "--json"], [0, 1, 2]));
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

/**
 * What the CLI prints for the window's other lists (issue 12), in a home like cliStatus's:
 * `switch --list --json` (SwitchCandidate[]) and `gateway client list --json` (GatewayClient[])
 * after two clients were added, one limited with --only.
 */
export function cliClients(bin) {
  const home = mkdtempSync(join(tmpdir(), "patchbay-ui-clients-"));
  try {
    const project = join(home, "src/app");
    mkdirSync(project, { recursive: true });
    writeClients(home, project);
    const env = {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: home,
      XDG_CONFIG_HOME: join(home, ".config"),
      XDG_DATA_HOME: join(home, ".local/share"),
      XDG_CACHE_HOME: join(home, ".cache"),
      XDG_RUNTIME_DIR: join(home, "run"),
      PATCHBAY_DATA_DIR: join(home, "patchbay"),
      PATCHBAY_DEFAULT_CATALOG: join(REPO, "catalog/mcp.json"),
      DBUS_SESSION_BUS_ADDRESS: "disabled:",
    };
    mkdirSync(env.XDG_RUNTIME_DIR, { recursive: true, mode: 0o700 });
    const run = (args) => execFileSync(bin, args, { cwd: project, env, encoding: "utf8", timeout: 30_000, stdio: ["ignore", "pipe", "pipe"] });
    run(["enable", "linear"]);
    run(["gateway", "client", "add", "cursor"]);
    run(["gateway", "client", "add", "ci-runner", "--only", "linear"]);
    return {
      switch_candidates: JSON.parse(run(["switch", "--list", "--json"])),
      gateway_clients: JSON.parse(run(["gateway", "client", "list", "--json"])),
    };
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

/** Realistic configs of several clients, one server in two of them. */
function writeClients(home, project) {
  put(join(home, ".claude.json"), {
    mcpServers: { notion: { type: "http", url: "https://mcp.notion.com/mcp" } },
    projects: { [project]: { mcpServers: {} } },
  });
  put(join(home, ".cursor/mcp.json"), {
    mcpServers: {
      notion: { url: "https://mcp.notion.com/mcp" },
      "team-tracker": { url: "https://tracker.internal.example/mcp" },
    },
  });
  put(join(project, ".cursor/mcp.json"), { mcpServers: { notion: { url: "https://mcp.notion.com/mcp" } } });
  put(join(home, ".config/Code/User/mcp.json"), {
    servers: { "local-db": { type: "stdio", command: "uvx", args: ["mcp-server-sqlite", "--db-path", "/tmp/x.db"] } },
  });
  put(join(home, ".config/Claude/claude_desktop_config.json"), {
    mcpServers: { "team-tracker": { command: "npx", args: ["-y", "mcp-remote", "https://tracker.internal.example/mcp"] } },
  });
  put(join(home, ".codeium/windsurf/mcp_config.json"), { mcpServers: {} });
}
