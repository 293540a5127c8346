//! Helpers for the end-to-end tests: find the `patchbay` binary that `cargo test --workspace`
//! built, run it against a throwaway data directory, and seed that directory's vault.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};

pub mod clients;
pub mod desktop;
pub mod peers;
pub mod sdk_servers;
pub mod secret_scan;
pub mod webdriver;

/// Names the command `add-to` writes into clients' entries (patchbay_core::client_config::
/// CONNECT_COMMAND_ENV). Every `patchbay` the tests run gets this build's binary: it sits in the
/// build tree, which Patchbay never writes on its own (a test that checks that rule removes it).
pub const CONNECT_COMMAND_ENV: &str = "PATCHBAY_CONNECT_COMMAND";

/// The value of [`CONNECT_COMMAND_ENV`] the tests give: this build's `patchbay`, resolved.
pub fn connect_command() -> PathBuf {
    let bin = patchbay_bin();
    bin.canonicalize().unwrap_or(bin)
}

/// The `patchbay` binary beside this test executable (target/<profile>/patchbay).
pub fn patchbay_bin() -> PathBuf {
    let exe = std::env::current_exe().expect("current exe");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps");
    let bin = profile_dir.join(format!("patchbay{}", std::env::consts::EXE_SUFFIX));
    assert!(
        bin.is_file(),
        "{} is missing: run these tests with `cargo test --workspace`, which builds the CLI",
        bin.display()
    );
    bin
}

/// True when the tests may use the real OS keychain (CI runs them inside a D-Bus session with an
/// unlocked gnome-keyring and sets PATCHBAY_TEST_KEYCHAIN=1).
pub fn keychain_available() -> bool {
    std::env::var("PATCHBAY_TEST_KEYCHAIN").as_deref() == Ok("1")
}

/// True in a CI-like run (scripts/test.sh sets PATCHBAY_TEST_INNER=1), where everything a test
/// needs is provided, so a test that cannot run is a failure, not a skip.
pub fn ci_like() -> bool {
    std::env::var("PATCHBAY_TEST_INNER").as_deref() == Ok("1")
}

/// A test that cannot run here because `why`: fails under [`ci_like`]; elsewhere says SKIPPED
/// on stderr, and the caller returns (libtest counts it as passed: scripts/test.sh runs it).
pub fn skip_or_fail(why: &str) {
    assert!(
        !ci_like(),
        "cannot run: {why}; under PATCHBAY_TEST_INNER=1 (scripts/test.sh) it must be provided"
    );
    eprintln!("SKIPPED: {why}");
}

/// Skip (with a SKIPPED notice; a failure under PATCHBAY_TEST_INNER=1) a test that needs the real
/// keychain when it is not provided.
#[macro_export]
macro_rules! require_keychain {
    () => {
        if !$crate::keychain_available() {
            $crate::skip_or_fail(
                "needs the real keychain (PATCHBAY_TEST_KEYCHAIN=1 in a D-Bus session with gnome-keyring)",
            );
            return;
        }
    };
}

/// A throwaway data directory and a way to run the CLI in it.
pub struct Sandbox {
    pub dir: tempfile::TempDir,
    /// When false, the child gets a D-Bus address that leads nowhere: its keychain is unreachable
    /// (the real keyring crate, failing for real) and a developer's own keychain is never touched.
    pub keychain: bool,
}

impl Sandbox {
    pub fn new(keychain: bool) -> Sandbox {
        Sandbox {
            dir: tempfile::tempdir().expect("tempdir"),
            keychain,
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Write a fixture catalog from tests/fixtures into the sandbox, returning its path.
    pub fn fixture(&self, name: &str) -> PathBuf {
        let source = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures")
            .join(name);
        let target = self.path().join(name);
        std::fs::copy(&source, &target).unwrap_or_else(|e| panic!("{}: {e}", source.display()));
        target
    }

    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let target = self.path().join(name);
        std::fs::write(&target, text).expect("write");
        target
    }

    pub fn command(&self) -> Command {
        self.command_for(&patchbay_bin())
    }

    /// [`command`](Sandbox::command) running the `patchbay` at `bin` (an installed copy, say).
    pub fn command_for(&self, bin: &Path) -> Command {
        let mut cmd = Command::new(bin);
        // The runtimes' homes are the sandbox's too, so no test reads or writes a developer's
        // own Claude Code or Codex files.
        cmd.env("PATCHBAY_DATA_DIR", self.path())
            .env(CONNECT_COMMAND_ENV, connect_command())
            .env("CLAUDE_CONFIG_DIR", self.path().join("claude"))
            .env("CODEX_HOME", self.path().join("codex"))
            .env_remove("CLAUDE_SECURESTORAGE_CONFIG_DIR")
            .env_remove("GITHUB_TOKEN")
            .env_remove("PATCHBAY_DEFAULT_CATALOG")
            .stdin(Stdio::null());
        if !self.keychain {
            cmd.env(
                "DBUS_SESSION_BUS_ADDRESS",
                format!("unix:path={}/no-such-bus", self.path().display()),
            );
        }
        cmd
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.command().args(args).output().expect("run patchbay")
    }

    pub fn run_with_stdin(&self, args: &[&str], stdin: &str) -> Output {
        use std::io::Write;
        let mut child = self
            .command()
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn patchbay");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(stdin.as_bytes())
            .expect("write stdin");
        child.wait_with_output().expect("wait")
    }

    /// The core, opened on this sandbox the way the CLI opens it (real keychain).
    pub fn core(&self, catalog: Option<PathBuf>) -> patchbay_core::Patchbay {
        let paths = patchbay_core::Paths::resolve(Some(self.path().to_path_buf()))
            .expect("paths")
            .with_catalog_override(catalog)
            .expect("catalog");
        patchbay_core::Patchbay::open(paths).expect("open")
    }

    /// Stores the reference's worked example `fx` (`http://localhost:3100/mcp`, its issuer on
    /// the same origin) under `key` as an authorization would: `access`, and `refresh` when
    /// given, lapsing at `expires_at`.
    pub fn store_fx_credential(
        &self,
        catalog: &Path,
        key: &str,
        access: &str,
        refresh: Option<&str>,
        expires_at: chrono::DateTime<chrono::Utc>,
    ) {
        use patchbay_vault::{CredentialRow, Secret, TokenSet};
        self.core(Some(catalog.to_path_buf()))
            .vault()
            .put_credential(
                &CredentialRow {
                    credential_key: patchbay_catalog::CredentialKey(key.into()),
                    server_name: "fx".into(),
                    server_url: Some("http://localhost:3100/mcp".into()),
                    expires_at: Some(expires_at),
                    has_refresh_token: refresh.is_some(),
                    one_shot: false,
                    issuer: Some("http://localhost:3100/".into()),
                    client_id: Some("client-1".into()),
                    scope: Some("mcp".into()),
                    updated_at: chrono::Utc::now(),
                    rotated_by: None,
                    rotated_at: None,
                },
                &TokenSet {
                    access_token: Secret::new(access),
                    refresh_token: refresh.map(Secret::new),
                },
            )
            .unwrap();
    }
}

/// Parse `status --json` output.
pub fn json(output: &Output) -> serde_json::Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): stdout={} stderr={}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

/// The state id of the connector `name` in a `status --json` document.
pub fn state_of<'a>(report: &'a serde_json::Value, name: &str) -> &'a str {
    report["connectors"]
        .as_array()
        .expect("connectors")
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no connector {name} in {report:#}"))["state"]
        .as_str()
        .expect("state")
}

/// Waits for `child` (a third-party CLI the tests drive) up to `limit`; past it, kills it and
/// fails the test naming `what` with `output()` (its captured output so far).
pub fn wait_within(
    child: &mut Child,
    limit: std::time::Duration,
    what: &str,
    output: impl Fn() -> String,
) -> ExitStatus {
    let deadline = std::time::Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("`{what}` did not finish within {limit:?}:\n{}", output());
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Runs `cmd` to its end within `limit` (killed and the test failed past it, with what it wrote
/// so far); its output, read from files so that a child's children holding the pipes cannot
/// stall it.
pub fn output_within(cmd: &mut Command, limit: std::time::Duration, what: &str) -> Output {
    let logs = tempfile::tempdir().expect("tempdir");
    let file = |n: &str| std::fs::File::create(logs.path().join(n)).expect("log file");
    let read = |n: &str| std::fs::read(logs.path().join(n)).unwrap_or_default();
    let mut child = cmd
        .stdout(file("stdout"))
        .stderr(file("stderr"))
        .spawn()
        .unwrap_or_else(|e| panic!("start {what}: {e}"));
    let status = wait_within(&mut child, limit, what, || {
        format!(
            "stdout:\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&read("stdout")),
            String::from_utf8_lossy(&read("stderr"))
        )
    });
    Output {
        status,
        stdout: read("stdout"),
        stderr: read("stderr"),
    }
}

/// Copy a directory tree (a fixture home into a sandbox, so a test may change it).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create the copy");
    for entry in std::fs::read_dir(from).expect("read the fixture") {
        let entry = entry.expect("a fixture entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("its type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy a fixture file");
        }
    }
}

/// The realistic home every client's MCP config is read from in the tests
/// (src-tauri/crates/runtimes/tests/fixtures/clients/home).
pub fn clients_fixture_home() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../src-tauri/crates/runtimes/tests/fixtures/clients/home")
}
