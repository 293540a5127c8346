//! Our Claude writers against the lock Claude Code 2.1.332 takes around its own secure-storage
//! writes, taken by the real npm `proper-lockfile` (installed in tests/node by scripts/setup.sh;
//! Claude Code bundles a reimplementation of it with the same on-disk protocol), driven by
//! tests/node/claude-storage-lock.mjs with Claude Code's options on `<config dir>/.storage-write`
//! (the lock directory `.storage-write.lock`).
//!
//! Shown both ways, by ordering evidence (an event log both processes append to, and what the
//! credential file ends up holding), never by durations beyond generous timeouts:
//! - while node holds the lock (having read the file), `ClaudeFileStore::write` waits, and runs
//!   after node's write and release, so node's entry and ours are both in the file (a writer that
//!   ignored the lock would write inside node's hold, and node's write would then drop ours);
//! - while we hold the lock, proper-lockfile's `lock()` retries, and gets it once we release;
//! - many rounds of both, interleaved, lose nothing, without any healing;
//! - and the real Claude Code CLI (tests/node, as in third_party_oauth.rs), whose
//!   `claude mcp remove` deletes the server's credential under its lock, offline: while we hold
//!   the lock its removal waits, and happens once we release.
//!
//! And the same for Claude Code's config, `.claude.json`, whose writes Claude Code guards with
//! `.claude.json.lock` (tests/node/claude-config-lock.mjs takes it with the npm library): "Add to
//! Claude Code" ([`add_server`]) waits while node holds it and keeps node's write; proper-lockfile
//! waits while our add holds it; and the real `claude mcp list` then lists the server we added.

use chrono::{Duration as ChronoDuration, Utc};
use patchbay_catalog::CredentialKey;
use patchbay_e2e::sdk_servers::node_dir;
use patchbay_runtimes::claude::{add_server, AddServerOutcome, ClaudeFileStore, ClaudeServerSpec};
use patchbay_runtimes::claude_lock::{
    claude_config_lock_path, claude_write_lock_path, ClaudeWriteLock,
};
use patchbay_runtimes::config::RuntimePaths;
use patchbay_runtimes::{RuntimeCredential, RuntimeStore, WriteOutcome};
use patchbay_vault::Secret;
use serde_json::{json, Value};
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// How long node may take to start and take its lock, and our writer to wait for it.
const GENEROUS: Duration = Duration::from_secs(30);
/// Long enough for a lock taker that ignored our lock to have taken it.
const LET_IT_RUN: Duration = Duration::from_secs(1);

const OURS: &str = "notion|3fad03f7abd02b9c";
const NODE: &str = "cc|1111111111111111";

fn script() -> PathBuf {
    let dir = node_dir();
    assert!(
        dir.join("node_modules/proper-lockfile/package.json")
            .is_file(),
        "{} is missing: run scripts/setup.sh (it runs `npm ci` in tests/node)",
        dir.join("node_modules/proper-lockfile").display()
    );
    dir.join("claude-storage-lock.mjs")
}

/// A Claude config dir holding the user's own login, and an event log outside it.
struct Rig {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    events: PathBuf,
}

impl Rig {
    fn new() -> Rig {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("claude");
        fs::create_dir(&dir).unwrap();
        fs::write(
            dir.join(".credentials.json"),
            json!({"claudeAiOauth": {"accessToken": "user-at", "refreshToken": "user-rt"}})
                .to_string(),
        )
        .unwrap();
        Rig {
            events: tmp.path().join("events"),
            dir,
            _tmp: tmp,
        }
    }

    fn credentials(&self) -> PathBuf {
        self.dir.join(".credentials.json")
    }

    fn store(&self) -> ClaudeFileStore {
        ClaudeFileStore::at(self.credentials()).with_lock_timeout(GENEROUS)
    }

    /// node claude-storage-lock.mjs DIR ARGS --events EVENTS
    fn node(&self, args: &[&str]) -> Child {
        Command::new("node")
            .current_dir(node_dir())
            .arg(script())
            .arg(&self.dir)
            .args(args)
            .arg("--events")
            .arg(&self.events)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start node (is Node.js installed? scripts/setup.sh installs it)")
    }

    /// Append one line to the event log (O_APPEND, as node does).
    fn event(&self, line: &str) {
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.events)
            .unwrap();
        file.write_all(format!("{line}\n").as_bytes()).unwrap();
    }

    fn events(&self) -> Vec<String> {
        fs::read_to_string(&self.events)
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// Wait until the log holds `line` (node still running, or done successfully).
    fn wait_for(&self, line: &str, child: &mut Child) {
        let deadline = Instant::now() + GENEROUS;
        while !self.events().iter().any(|e| e == line) {
            if let Some(status) = child.try_wait().unwrap() {
                assert!(
                    self.events().iter().any(|e| e == line),
                    "node exited ({status}) before {line:?}; events {:?}",
                    self.events()
                );
            }
            assert!(
                Instant::now() < deadline,
                "no {line:?} within {GENEROUS:?}; events {:?}",
                self.events()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn read(&self) -> Value {
        serde_json::from_str(&fs::read_to_string(self.credentials()).unwrap()).unwrap()
    }

    /// Position of `line` in the log (it must be there).
    fn at(&self, line: &str) -> usize {
        let events = self.events();
        events
            .iter()
            .position(|e| e == line)
            .unwrap_or_else(|| panic!("no {line:?} in {events:?}"))
    }
}

fn finished(child: Child) -> Output {
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "node failed ({}): {}{}",
        output.status,
        String::from_utf8_lossy(&output.stderr),
        String::from_utf8_lossy(&output.stdout)
    );
    output
}

fn cred(key: &str, access: &str) -> RuntimeCredential {
    let key = CredentialKey(key.to_string());
    RuntimeCredential {
        server_name: key.server_name().to_string(),
        key,
        server_url: "http://localhost:3100/mcp".into(),
        access_token: Secret::new(access),
        refresh_token: Some(Secret::new(format!("{access}-refresh"))),
        expires_at: Some(Utc::now() + ChronoDuration::hours(1)),
        scope: None,
        client_id: Some("client-1".into()),
        client_secret: None,
        issuer: None,
    }
}

fn lock_dir(rig: &Rig) -> PathBuf {
    claude_write_lock_path(&rig.dir)
}

fn assert_released(path: &Path) {
    assert!(!path.exists(), "{} left behind", path.display());
}

#[test]
fn our_write_waits_for_proper_lockfile_and_keeps_nodes_write() {
    let rig = Rig::new();
    // Node locks, reads the file, holds for 1.5 s, writes its entry, releases.
    let mut node = rig.node(&["--hold", "1500", "--write", NODE]);
    rig.wait_for("node:locked", &mut node);
    assert!(lock_dir(&rig).is_dir(), "proper-lockfile's lock directory");

    let outcome = rig.store().write(&cred(OURS, "ours"), Utc::now()).unwrap();
    rig.event("patchbay:wrote");
    assert_eq!(outcome, WriteOutcome::Written);
    finished(node);

    assert!(
        rig.at("node:wrote") < rig.at("node:releasing")
            && rig.at("node:releasing") < rig.at("patchbay:wrote"),
        "our write did not wait for node's: {:?}",
        rig.events()
    );
    let file = rig.read();
    assert_eq!(file["mcpOAuth"][NODE]["accessToken"], "node-at-0", "{file}");
    assert_eq!(file["mcpOAuth"][OURS]["accessToken"], "ours", "{file}");
    assert_eq!(file["claudeAiOauth"]["accessToken"], "user-at");
    assert_released(&lock_dir(&rig));
}

#[test]
fn proper_lockfile_waits_for_our_lock() {
    let rig = Rig::new();
    let held = ClaudeWriteLock::acquire(&lock_dir(&rig), GENEROUS).unwrap();
    rig.event("patchbay:locked");
    // Claude Code's options retry for ~7.5 s in all before giving up.
    let mut node = rig.node(&["--write", NODE]);
    rig.wait_for("node:locking", &mut node);
    std::thread::sleep(LET_IT_RUN);
    assert!(
        !rig.events().iter().any(|e| e == "node:locked"),
        "proper-lockfile took the lock while we held it: {:?}",
        rig.events()
    );
    assert!(rig.read()["mcpOAuth"].get(NODE).is_none());
    rig.event("patchbay:releasing");
    drop(held);

    finished(node);
    assert!(
        rig.at("patchbay:releasing") < rig.at("node:locked"),
        "{:?}",
        rig.events()
    );
    assert_eq!(rig.read()["mcpOAuth"][NODE]["accessToken"], "node-at-0");
    assert_released(&lock_dir(&rig));
}

#[test]
fn interleaved_writers_lose_nothing_without_healing() {
    const ROUNDS: usize = 15;
    let rig = Rig::new();
    // Each round of node's: lock, read, 20 ms, write, release.
    let mut node = rig.node(&[
        "--count",
        &ROUNDS.to_string(),
        "--hold",
        "20",
        "--write",
        "cc-{i}|1111111111111111",
    ]);
    rig.wait_for("node:locked", &mut node);
    let store = rig.store();
    for i in 0..ROUNDS {
        let key = format!("pb-{i}|2222222222222222");
        assert_eq!(
            store
                .write(&cred(&key, &format!("ours-{i}")), Utc::now())
                .unwrap(),
            WriteOutcome::Written
        );
    }
    finished(node);

    let file = rig.read();
    let entries = file["mcpOAuth"].as_object().unwrap();
    let missing: Vec<String> = (0..ROUNDS)
        .flat_map(|i| {
            [
                format!("cc-{i}|1111111111111111"),
                format!("pb-{i}|2222222222222222"),
            ]
        })
        .filter(|k| !entries.contains_key(k))
        .collect();
    assert!(missing.is_empty(), "lost {missing:?}; the file: {file}");
    assert_eq!(file["claudeAiOauth"]["accessToken"], "user-at");
    assert_released(&lock_dir(&rig));
}

/// The real Claude Code CLI (npm `@anthropic-ai/claude-code`, its native binary put at the
/// package's `bin/claude.exe` by its postinstall).
fn claude_bin() -> PathBuf {
    let bin = node_dir().join("node_modules/@anthropic-ai/claude-code/bin/claude.exe");
    assert!(
        bin.is_file(),
        "{} is missing: run scripts/setup.sh (it runs `npm ci` in tests/node)",
        bin.display()
    );
    bin
}

#[test]
fn claude_code_itself_waits_for_our_lock() {
    // `fx` at user scope, its credential written by us (key from the reference's worked example).
    const FX: &str = "fx|528e1818a7ba21cf";
    let rig = Rig::new();
    let claude_json = rig.dir.join(".claude.json");
    fs::write(
        &claude_json,
        json!({"mcpServers": {"fx": {"type": "http", "url": "http://localhost:3100/mcp"}}})
            .to_string(),
    )
    .unwrap();
    rig.store().write(&cred(FX, "ours"), Utc::now()).unwrap();
    let home = rig.dir.with_file_name("home");
    fs::create_dir(&home).unwrap();

    let held = ClaudeWriteLock::acquire(&lock_dir(&rig), GENEROUS).unwrap();
    let mut claude = Command::new(claude_bin())
        .args(["mcp", "remove", "fx", "-s", "user"])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env("CLAUDE_CONFIG_DIR", &rig.dir)
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .current_dir(&home)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start claude");
    // It edits `.claude.json` first (under a lock of its own), then the credentials.
    let deadline = Instant::now() + GENEROUS;
    loop {
        let config: Value =
            serde_json::from_str(&fs::read_to_string(&claude_json).unwrap()).unwrap_or(Value::Null);
        if config["mcpServers"].is_object() && config["mcpServers"].get("fx").is_none() {
            break;
        }
        if claude.try_wait().unwrap().is_some() || Instant::now() > deadline {
            let _ = claude.kill();
            let output = claude.wait_with_output().unwrap();
            panic!(
                "`claude mcp remove` did not remove fx from .claude.json ({}): {}{}",
                output.status,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(LET_IT_RUN);
    assert!(
        rig.read()["mcpOAuth"].get(FX).is_some(),
        "Claude Code removed the credential while we held its lock"
    );
    assert!(
        claude.try_wait().unwrap().is_none(),
        "Claude Code is waiting"
    );
    drop(held);

    // Its retries give up after ~7.5 s in all: it must have the lock long before.
    let output = claude.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "`claude mcp remove` failed ({}): {}{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let file = rig.read();
    assert!(file["mcpOAuth"].get(FX).is_none(), "{file}");
    assert_eq!(file["claudeAiOauth"]["accessToken"], "user-at");
    assert_released(&lock_dir(&rig));
}

/// A home whose Claude Code config holds the user's own settings (members we never touch).
struct ConfigRig {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    events: PathBuf,
}

impl ConfigRig {
    fn new() -> ConfigRig {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        fs::create_dir(&home).unwrap();
        fs::write(
            home.join(".claude.json"),
            json!({"numStartups": 7, "userID": "u-1", "projects": {"/w": {"allowedTools": ["x"]}},
                   "mcpServers": {"mine": {"type": "stdio", "command": "mine"}}})
            .to_string(),
        )
        .unwrap();
        ConfigRig {
            events: tmp.path().join("events"),
            home,
            _tmp: tmp,
        }
    }

    fn paths(&self) -> RuntimePaths {
        RuntimePaths::resolve(&self.home, &|_| None)
    }

    fn config(&self) -> PathBuf {
        self.home.join(".claude.json")
    }

    fn read(&self) -> Value {
        serde_json::from_str(&fs::read_to_string(self.config()).unwrap()).unwrap()
    }

    fn node(&self, args: &[&str]) -> Child {
        Command::new("node")
            .current_dir(node_dir())
            .arg(node_dir().join("claude-config-lock.mjs"))
            .arg(self.config())
            .args(args)
            .arg("--events")
            .arg(&self.events)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start node (is Node.js installed? scripts/setup.sh installs it)")
    }

    /// The event log, read through a [`Rig`]-like view.
    fn log(&self) -> EventLog<'_> {
        EventLog(&self.events)
    }
}

struct EventLog<'a>(&'a Path);

impl EventLog<'_> {
    fn lines(&self) -> Vec<String> {
        fs::read_to_string(self.0)
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    fn push(&self, line: &str) {
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.0)
            .unwrap();
        file.write_all(format!("{line}\n").as_bytes()).unwrap();
    }

    fn wait_for(&self, line: &str, child: &mut Child) {
        let deadline = Instant::now() + GENEROUS;
        while !self.lines().iter().any(|e| e == line) {
            if let Some(status) = child.try_wait().unwrap() {
                assert!(
                    self.lines().iter().any(|e| e == line),
                    "node exited ({status}) before {line:?}; events {:?}",
                    self.lines()
                );
            }
            assert!(
                Instant::now() < deadline,
                "no {line:?} within {GENEROUS:?}; events {:?}",
                self.lines()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn at(&self, line: &str) -> usize {
        let lines = self.lines();
        lines
            .iter()
            .position(|e| e == line)
            .unwrap_or_else(|| panic!("no {line:?} in {lines:?}"))
    }
}

fn notion_spec() -> ClaudeServerSpec {
    ClaudeServerSpec {
        name: "notion".into(),
        kind: "http".into(),
        url: "http://127.0.0.1:9/mcp".into(),
        headers: Default::default(),
    }
}

fn assert_user_settings_kept(config: &Value) {
    assert_eq!(config["numStartups"], 7, "{config}");
    assert_eq!(config["userID"], "u-1", "{config}");
    assert_eq!(
        config["projects"]["/w"]["allowedTools"],
        json!(["x"]),
        "{config}"
    );
    assert_eq!(config["mcpServers"]["mine"]["command"], "mine", "{config}");
}

#[test]
fn add_to_claude_code_waits_for_claude_config_lock_and_keeps_its_write() {
    let rig = ConfigRig::new();
    // Node locks `.claude.json`, reads it, holds 1.5 s, adds its server, releases.
    let mut node = rig.node(&["--hold", "1500", "--add", "from-node"]);
    rig.log().wait_for("node:locked", &mut node);
    assert!(claude_config_lock_path(&rig.config()).is_dir());

    assert_eq!(
        add_server(&rig.paths(), &notion_spec()).unwrap(),
        AddServerOutcome::Added
    );
    rig.log().push("patchbay:added");
    finished(node);

    let log = rig.log();
    assert!(
        log.at("node:wrote") < log.at("node:releasing")
            && log.at("node:releasing") < log.at("patchbay:added"),
        "our add did not wait for node's write: {:?}",
        log.lines()
    );
    let config = rig.read();
    assert_eq!(
        config["mcpServers"]["from-node"]["type"], "http",
        "{config}"
    );
    assert_eq!(
        config["mcpServers"]["notion"],
        json!({"type": "http", "url": "http://127.0.0.1:9/mcp"}),
        "{config}"
    );
    assert_user_settings_kept(&config);
    assert_released(&claude_config_lock_path(&rig.config()));
}

#[test]
fn proper_lockfile_waits_while_our_add_holds_claude_config_lock() {
    let rig = ConfigRig::new();
    let held = ClaudeWriteLock::acquire(&claude_config_lock_path(&rig.config()), GENEROUS).unwrap();
    let mut node = rig.node(&["--add", "from-node"]);
    rig.log().wait_for("node:locking", &mut node);
    std::thread::sleep(LET_IT_RUN);
    assert!(
        !rig.log().lines().iter().any(|e| e == "node:locked"),
        "proper-lockfile took .claude.json.lock while we held it: {:?}",
        rig.log().lines()
    );
    rig.log().push("patchbay:releasing");
    drop(held);
    finished(node);
    assert!(rig.log().at("patchbay:releasing") < rig.log().at("node:locked"));
    assert_eq!(rig.read()["mcpServers"]["from-node"]["type"], "http");
    assert_released(&claude_config_lock_path(&rig.config()));
}

/// `claude mcp list` in `home` (offline: no Anthropic traffic; the listed servers are on
/// 127.0.0.1 and may be down): its stdout.
fn claude_mcp_list(home: &Path) -> String {
    let logs = tempfile::tempdir().unwrap();
    let file = |name: &str| fs::File::create(logs.path().join(name)).unwrap();
    let read = |name: &str| fs::read_to_string(logs.path().join(name)).unwrap_or_default();
    let mut claude = Command::new(claude_bin())
        .args(["mcp", "list"])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .current_dir(home)
        .stdin(Stdio::null())
        .stdout(file("stdout"))
        .stderr(file("stderr"))
        .spawn()
        .expect("start claude");
    let status =
        patchbay_e2e::wait_within(&mut claude, GENEROUS, "claude mcp list", || read("stderr"));
    assert!(
        status.success(),
        "`claude mcp list` failed ({status}): {}{}",
        read("stdout"),
        read("stderr")
    );
    read("stdout")
}

#[test]
fn claude_code_lists_the_server_add_to_claude_code_wrote() {
    let rig = ConfigRig::new();
    let before = claude_mcp_list(&rig.home);
    assert!(!before.contains("notion:"), "{before}");
    // Claude Code rewrites its config as it runs: compare with what it left.
    let mut expected = rig.read();
    assert_eq!(
        add_server(&rig.paths(), &notion_spec()).unwrap(),
        AddServerOutcome::Added
    );
    expected["mcpServers"]["notion"] = json!({"type": "http", "url": "http://127.0.0.1:9/mcp"});
    assert_eq!(rig.read(), expected, "only the server was added");
    let after = claude_mcp_list(&rig.home);
    assert!(
        after.contains("notion: http://127.0.0.1:9/mcp (HTTP)"),
        "{after}"
    );
    assert!(after.contains("mine: mine"), "{after}");
}
