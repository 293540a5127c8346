//! A desktop session of a test's own, for tests that run the real tray app: a private D-Bus
//! session bus with an unlocked gnome-keyring on it, a home, XDG dirs, Patchbay's data dir and
//! catalogs in one temp dir; the environment every process of the session gets (a BROWSER of
//! its own, so nothing opens the machine's browser); the `patchbay` CLI in it; the tray app
//! binary (built when stale); and the stand-in panel (tests/python/tray_panel.py) that reads the
//! app's StatusNotifierItem and dbusmenu menu as a desktop's panel does, sees its notifications
//! and clicks its menu. Used by tests/tray_panel.rs and tests/window_webdriver.rs.

use patchbay_status::StatusReport;
use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// Kills and reaps a child when dropped (the test's own children, by PID).
pub struct Reaped(pub Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Polls `probe` until it gives a value, or fails naming `what` after `limit`.
pub fn poll<T>(limit: Duration, what: &str, mut probe: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(value) = probe() {
            return value;
        }
        assert!(Instant::now() < deadline, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The repository's root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("repo")
        .to_path_buf()
}

/// The tray app, built now if it is missing or stale (`cargo test --workspace` builds the
/// binaries of packages with integration tests only, and patchbay-app has none). Once per run.
pub fn app_bin() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let bin = crate::patchbay_bin().with_file_name("patchbay-app");
            // Cargo names itself to the tests it runs; run directly, use what is there.
            if let Some(cargo) = std::env::var_os("CARGO") {
                let release = bin.parent().is_some_and(|d| d.ends_with("release"));
                let started = Instant::now();
                let mut build = Command::new(cargo);
                build
                    .args(["build", "--locked", "-p", "patchbay-app"])
                    .current_dir(repo());
                if release {
                    build.arg("--release");
                }
                let status = build.status().expect("cargo build -p patchbay-app");
                assert!(status.success(), "cargo build -p patchbay-app: {status}");
                eprintln!("patchbay-app built or up to date in {:?}", started.elapsed());
            }
            assert!(
                bin.is_file(),
                "{} is missing: build it with `cargo build -p patchbay-app --locked` (after `npm --prefix ui run build`)",
                bin.display()
            );
            bin
        })
        .clone()
}

/// Debian's python3-dbus and python3-gi live in the system interpreter, not in a pyenv one.
pub fn system_python() -> &'static str {
    if Path::new("/usr/bin/python3").is_file() {
        "/usr/bin/python3"
    } else {
        "python3"
    }
}

/// A desktop session of the test's own. Nothing else is on its bus.
pub struct DesktopSession {
    dir: tempfile::TempDir,
    address: String,
    /// Environment variables set on top of the session's (a test's BROWSER, ...).
    extra: Vec<(String, String)>,
    // Dropped in reverse order of start: the keyring before its bus.
    _keyring: Reaped,
    _bus: Reaped,
}

impl DesktopSession {
    /// A session whose user catalog (Patchbay's data dir's mcp.json) is `catalog` and whose
    /// default (shipped) catalog is empty.
    pub fn start(catalog: &str) -> DesktopSession {
        let dir = tempfile::tempdir().expect("tempdir");
        for sub in ["home", "runtime", "data", "config", "cache", "patchbay"] {
            std::fs::create_dir_all(dir.path().join(sub)).expect("mkdir");
        }
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(
            dir.path().join("runtime"),
            std::fs::Permissions::from_mode(0o700),
        )
        .expect("chmod");
        let socket = dir.path().join("bus");
        let address = format!("unix:path={}", socket.display());
        let bus = Command::new("dbus-daemon")
            .args(["--session", "--nofork", "--nopidfile"])
            .arg(format!("--address={address}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .expect("dbus-daemon (apt: dbus)");
        let bus = Reaped(bus);
        poll(Duration::from_secs(10), "the session bus", || {
            socket.exists().then_some(())
        });
        let mut keyring = Command::new("gnome-keyring-daemon");
        keyring
            .args(["--foreground", "--unlock", "--components=secrets"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        environment(dir.path(), &address, &[], &mut keyring);
        let mut keyring = keyring
            .spawn()
            .expect("gnome-keyring-daemon (apt: gnome-keyring)");
        // A login keyring needs a non-empty password; stdin is closed after it.
        keyring
            .stdin
            .take()
            .expect("stdin")
            .write_all(b"ci")
            .expect("password");
        let session = DesktopSession {
            dir,
            address,
            extra: Vec::new(),
            _keyring: Reaped(keyring),
            _bus: bus,
        };
        poll(Duration::from_secs(20), "gnome-keyring on the bus", || {
            session
                .name_has_owner("org.freedesktop.secrets")
                .then_some(())
        });
        std::fs::write(session.path("patchbay/mcp.json"), catalog).expect("catalog");
        std::fs::write(session.path("default-catalog.json"), "{}").expect("catalog");
        session
    }

    /// A path inside the session's temp dir.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// The session bus's address.
    pub fn bus_address(&self) -> &str {
        &self.address
    }

    /// Sets `key` for every process started in the session from now on.
    pub fn set_env(&mut self, key: &str, value: impl Into<String>) {
        self.extra.push((key.to_owned(), value.into()));
    }

    /// Everything a process of the session sees: the bus, the home, the data dir, the catalogs;
    /// nothing of the caller's environment but PATH and the display.
    pub fn environment(&self, cmd: &mut Command) {
        environment(self.dir.path(), &self.address, &self.extra, cmd);
    }

    pub fn name_has_owner(&self, name: &str) -> bool {
        let output = Command::new("dbus-send")
            .arg(format!("--bus={}", self.address))
            .args([
                "--print-reply",
                "--reply-timeout=2000",
                "--dest=org.freedesktop.DBus",
                "/org/freedesktop/DBus",
                "org.freedesktop.DBus.NameHasOwner",
            ])
            .arg(format!("string:{name}"))
            .output()
            .expect("dbus-send");
        String::from_utf8_lossy(&output.stdout).contains("boolean true")
    }

    /// A BROWSER (the session's browser.sh) that records each call instead of opening anything;
    /// returns the file it appends the calls to (absent until the first call).
    pub fn record_browser(&self) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let calls = self.path("browser-calls");
        let script = self.path("browser.sh");
        std::fs::write(
            &script,
            format!("#!/bin/sh\necho \"$@\" >> '{}'\n", calls.display()),
        )
        .expect("browser script");
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        calls
    }

    /// The `patchbay` CLI in this session; fails the test on an exit code above 1.
    pub fn cli(&self, args: &[&str]) -> Output {
        let mut cmd = Command::new(crate::patchbay_bin());
        self.environment(&mut cmd);
        let output = cmd
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("patchbay");
        Self::check_cli(args, output)
    }

    /// [`cli`](DesktopSession::cli) with `input` on its stdin (closed after it).
    pub fn cli_with_input(&self, args: &[&str], input: &str) -> Output {
        let mut cmd = Command::new(crate::patchbay_bin());
        self.environment(&mut cmd);
        cmd.args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("patchbay");
        let mut stdin = child.stdin.take().expect("stdin");
        stdin.write_all(input.as_bytes()).expect("stdin");
        drop(stdin);
        let output = child.wait_with_output().expect("patchbay");
        Self::check_cli(args, output)
    }

    fn check_cli(args: &[&str], output: Output) -> Output {
        assert!(
            output.status.code().is_some_and(|c| c <= 1),
            "patchbay {args:?}: {}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        output
    }

    /// `patchbay status --json` in this session: what every surface of the app must show.
    pub fn report(&self) -> Value {
        crate::json(&self.cli(&["status", "--json"]))
    }

    /// [`report`](DesktopSession::report), typed (what core's badge and TrayModel take).
    pub fn status_report(&self) -> StatusReport {
        let output = self.cli(&["status", "--json"]);
        serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
            panic!(
                "status --json does not parse as a StatusReport ({e}): {}",
                String::from_utf8_lossy(&output.stdout)
            )
        })
    }

    /// `patchbay secret set NAME` with `value` on stdin; fails the test unless it succeeds.
    pub fn set_secret(&self, name: &str, value: &str) {
        let output = self.cli_with_input(&["secret", "set", name], value);
        assert!(
            output.status.success(),
            "secret set {name}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

/// The stand-in panel (tests/python/tray_panel.py) on a session's bus, its JSON lines on a
/// channel. Killed on drop.
pub struct StandInPanel {
    lines: Receiver<Value>,
    stdin: ChildStdin,
    /// Everything it printed so far, for failure messages.
    pub seen: Vec<Value>,
    _child: Reaped,
}

impl StandInPanel {
    pub fn start(session: &DesktopSession, args: &[&str]) -> StandInPanel {
        let mut cmd = Command::new(system_python());
        session.environment(&mut cmd);
        cmd.arg(repo().join("tests/python/tray_panel.py"))
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = cmd
            .spawn()
            .expect("the stand-in panel (apt: python3-dbus python3-gi)");
        let stdout = child.stdout.take().expect("stdout");
        let stdin = child.stdin.take().expect("stdin");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                match serde_json::from_str::<Value>(&line) {
                    Ok(value) => {
                        if tx.send(value).is_err() {
                            break;
                        }
                    }
                    Err(e) => eprintln!("panel: not JSON ({e}): {line}"),
                }
            }
        });
        let mut panel = StandInPanel {
            lines,
            stdin,
            seen: Vec::new(),
            _child: Reaped(child),
        };
        panel.expect(
            "the stand-in panel to start",
            Duration::from_secs(20),
            |v| v["event"] == "ready",
        );
        panel
    }

    /// The next line (after those already seen) that `wanted`, within `limit`.
    pub fn expect(
        &mut self,
        what: &str,
        limit: Duration,
        wanted: impl Fn(&Value) -> bool,
    ) -> Value {
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(value) => {
                    if value["event"] == "error" {
                        eprintln!("panel: {value}");
                    }
                    self.seen.push(value.clone());
                    if wanted(&value) {
                        return value;
                    }
                }
                Err(RecvTimeoutError::Timeout) => panic!(
                    "{what}: not within {limit:?}; the panel's last lines: {}",
                    self.tail()
                ),
                Err(RecvTimeoutError::Disconnected) => {
                    panic!("{what}: the panel exited; its last lines: {}", self.tail())
                }
            }
        }
    }

    /// A line from line `since` on that `wanted`: one already seen, else the next, within `limit`.
    pub fn expect_since(
        &mut self,
        since: usize,
        what: &str,
        limit: Duration,
        wanted: impl Fn(&Value) -> bool,
    ) -> Value {
        if let Some(seen) = self.seen[since..].iter().find(|v| wanted(v)) {
            return seen.clone();
        }
        self.expect(what, limit, wanted)
    }

    /// The signals and registrations the panel saw since line `since`.
    pub fn news_since(&self, since: usize) -> Vec<String> {
        self.seen[since..]
            .iter()
            .filter_map(|v| match v["event"].as_str() {
                Some("signal") => v["name"].as_str().map(str::to_owned),
                Some("registered") => Some("registered".to_owned()),
                _ => None,
            })
            .collect()
    }

    /// Clicks the menu item `id` as a panel does (AboutToShow, then Event "clicked"); returns
    /// once the panel has sent it, within `limit`.
    pub fn click(&mut self, id: i64, limit: Duration) {
        self.send(serde_json::json!({"cmd": "click", "id": id}));
        self.expect("the click to be sent", limit, |v| {
            v["event"] == "clicked" && v["id"] == id
        });
    }

    /// Its latest snapshot that `wanted` (one already seen, else the next), within `limit`.
    pub fn snapshot_where(
        &mut self,
        what: &str,
        limit: Duration,
        wanted: impl Fn(&Value) -> bool,
    ) -> Value {
        let is = |v: &Value| v["event"] == "snapshot" && v.get("menu").is_some() && wanted(v);
        if let Some(last) = self.seen.iter().rev().find(|v| v["event"] == "snapshot") {
            if is(last) {
                return last.clone();
            }
        }
        self.send(serde_json::json!({"cmd": "snapshot"}));
        self.expect(what, limit, is)
    }

    pub fn send(&mut self, command: Value) {
        writeln!(self.stdin, "{command}").expect("panel stdin");
        self.stdin.flush().expect("panel stdin");
    }

    fn tail(&self) -> String {
        self.seen
            .iter()
            .rev()
            .take(6)
            .rev()
            .map(|v| {
                let mut v = v.clone();
                if let Some(icon) = v.get_mut("icon").and_then(|i| i.get_mut("rgba")) {
                    *icon = Value::from("…");
                }
                v.to_string()
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// The labels of a panel snapshot's menu, in order (separators left out).
pub fn menu_labels(snapshot: &Value) -> Vec<String> {
    snapshot["menu"]["layout"]["children"]
        .as_array()
        .map(|children| {
            children
                .iter()
                .filter(|c| c["visible"] != false && c["type"] != "separator")
                .filter_map(|c| c["label"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn environment(dir: &Path, address: &str, extra: &[(String, String)], cmd: &mut Command) {
    let p = |rel: &str| dir.join(rel);
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("DISPLAY", std::env::var_os("DISPLAY").unwrap_or_default())
        .env(
            "XAUTHORITY",
            std::env::var_os("XAUTHORITY").unwrap_or_default(),
        )
        // GTK sets the window's WM_NAME only in a UTF-8 locale.
        .env("LANG", "C.UTF-8")
        .env("DBUS_SESSION_BUS_ADDRESS", address)
        .env("HOME", p("home"))
        .env("XDG_RUNTIME_DIR", p("runtime"))
        .env("XDG_DATA_HOME", p("data"))
        .env("XDG_CONFIG_HOME", p("config"))
        .env("XDG_CACHE_HOME", p("cache"))
        .env("PATCHBAY_DATA_DIR", p("patchbay"))
        .env("PATCHBAY_DEFAULT_CATALOG", p("default-catalog.json"))
        .env(crate::CONNECT_COMMAND_ENV, crate::connect_command())
        .env("CLAUDE_CONFIG_DIR", p("home/.claude"))
        .env("CODEX_HOME", p("home/.codex"))
        // The session's own browser.sh ([`DesktopSession::record_browser`] writes one; a test
        // may set another): absent, opening a URL fails instead of reaching a real browser.
        .env("BROWSER", p("browser.sh"))
        // No accessibility bus or dconf activated on the private bus.
        .env("NO_AT_BRIDGE", "1")
        .env("GSETTINGS_BACKEND", "memory")
        .env("RUST_LOG", "info");
    for (key, value) in extra {
        cmd.env(key, value);
    }
}
