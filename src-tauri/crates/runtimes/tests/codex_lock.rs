//! Our Codex file-store writer against the lock Codex 0.171.0 takes around its own reads and
//! writes of `$CODEX_HOME/.credentials.json`: an exclusive `flock` on
//! `$CODEX_HOME/mcp-oauth-locks/file-store.lock`, held here by util-linux's `flock(1)` (the real
//! Codex CLI waiting on the same lock is pinned in tests/tests/codex_cli.rs). Shown by ordering
//! evidence: an event log both sides append to.

use chrono::{Duration as ChronoDuration, Utc};
use patchbay_catalog::CredentialKey;
use patchbay_runtimes::codex::{codex_refresh_lock_path, lock_codex_refresh, CodexFileStore};
use patchbay_runtimes::{RuntimeCredential, RuntimeError, RuntimeStore, WriteOutcome};
use patchbay_vault::Secret;
use serde_json::{json, Value};
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const GENEROUS: Duration = Duration::from_secs(30);
/// Long enough for a writer that ignored the lock to have written.
const LET_IT_RUN: Duration = Duration::from_millis(700);
const FX: &str = "fx|528e1818a7ba21cf";

fn cred(access: &str) -> RuntimeCredential {
    RuntimeCredential {
        key: CredentialKey(FX.into()),
        server_name: "fx".into(),
        server_url: "http://localhost:3100/mcp".into(),
        access_token: Secret::new(access),
        refresh_token: None,
        expires_at: Some(Utc::now() + ChronoDuration::hours(1)),
        scope: None,
        client_id: Some("client-1".into()),
        client_secret: None,
        issuer: None,
    }
}

struct Rig {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    events: PathBuf,
}

impl Rig {
    fn new() -> Rig {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("codex");
        fs::create_dir_all(home.join("mcp-oauth-locks")).unwrap();
        fs::write(
            home.join(".credentials.json"),
            json!({"other|0123456789abcdef": {"server_name": "other", "server_url": "http://o/mcp",
                                              "client_id": "c", "access_token": "theirs"}})
            .to_string(),
        )
        .unwrap();
        Rig {
            events: tmp.path().join("events"),
            home,
            _tmp: tmp,
        }
    }

    fn store(&self) -> CodexFileStore {
        CodexFileStore::at(self.home.join(".credentials.json")).with_lock_timeout(GENEROUS)
    }

    /// `flock(1)` holding Codex's lock until `release` exists in the rig.
    fn hold(&self) -> Child {
        let lock = self.store().codex_lock_path();
        assert_eq!(lock, self.home.join("mcp-oauth-locks/file-store.lock"));
        let script = format!(
            "echo codex:locked >> '{events}'; while [ ! -e '{release}' ]; do sleep 0.02; done; \
             echo codex:releasing >> '{events}'",
            events = self.events.display(),
            release = self.release_path().display()
        );
        Command::new("flock")
            .arg("-x")
            .arg(&lock)
            .args(["sh", "-c", &script])
            .stdin(Stdio::null())
            .spawn()
            .expect("flock(1) (util-linux)")
    }

    fn release_path(&self) -> PathBuf {
        self.events.with_file_name("release")
    }

    fn events(&self) -> Vec<String> {
        fs::read_to_string(&self.events)
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    fn wait_for(&self, line: &str) {
        let deadline = Instant::now() + GENEROUS;
        while !self.events().iter().any(|e| e == line) {
            assert!(
                Instant::now() < deadline,
                "no {line:?}: {:?}",
                self.events()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn at(&self, line: &str) -> usize {
        let events = self.events();
        events
            .iter()
            .position(|e| e == line)
            .unwrap_or_else(|| panic!("no {line:?} in {events:?}"))
    }

    fn file(&self) -> Value {
        serde_json::from_slice(&fs::read(self.home.join(".credentials.json")).unwrap()).unwrap()
    }
}

#[test]
fn our_codex_file_write_waits_for_codexs_store_lock() {
    let rig = Rig::new();
    let mut holder = rig.hold();
    rig.wait_for("codex:locked");

    let writer = {
        let store = rig.store();
        let events = rig.events.clone();
        std::thread::spawn(move || {
            let outcome = store.write(&cred("ours"), Utc::now());
            let mut file = OpenOptions::new().append(true).open(&events).unwrap();
            file.write_all(b"patchbay:wrote\n").unwrap();
            outcome
        })
    };
    let watch_until = Instant::now() + LET_IT_RUN;
    while Instant::now() < watch_until {
        assert!(
            !writer.is_finished() && rig.file().get(FX).is_none(),
            "our write went ahead while Codex held its lock: {:?}",
            rig.events()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    fs::write(rig.release_path(), "").unwrap();
    assert!(holder.wait().unwrap().success());
    assert_eq!(writer.join().unwrap().unwrap(), WriteOutcome::Written);
    assert!(rig.at("codex:releasing") < rig.at("patchbay:wrote"));
    let file = rig.file();
    assert_eq!(file[FX]["access_token"], "ours");
    assert_eq!(file["other|0123456789abcdef"]["access_token"], "theirs");
}

#[test]
fn a_codex_lock_held_past_the_timeout_is_busy_and_changes_nothing() {
    let rig = Rig::new();
    let mut holder = rig.hold();
    rig.wait_for("codex:locked");
    let before = fs::read(rig.home.join(".credentials.json")).unwrap();
    let store = rig.store().with_lock_timeout(Duration::from_millis(200));
    let err = store.write(&cred("ours"), Utc::now()).unwrap_err();
    assert!(
        matches!(&err, RuntimeError::Busy { message, .. } if message.contains("Codex held")),
        "{err}"
    );
    assert_eq!(
        fs::read(rig.home.join(".credentials.json")).unwrap(),
        before
    );
    fs::write(rig.release_path(), "").unwrap();
    assert!(holder.wait().unwrap().success());
}

#[test]
fn a_write_creates_codexs_lock_directory_as_codex_does() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("fresh-codex");
    let store = CodexFileStore::at(home.join(".credentials.json"));
    // A read takes nothing where Codex has never locked (and creates nothing).
    assert!(store.read_all().unwrap().is_empty());
    assert!(!home.exists());
    store.write(&cred("ours"), Utc::now()).unwrap();
    assert!(Path::new(&store.codex_lock_path()).is_file());
}

#[test]
fn codex_refresh_lock_is_the_file_codex_names_and_excludes_flock() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("codex");
    // Measured: Codex 0.171.0 created this file for the key `fx|83b53a61101cadfc`.
    let key = CredentialKey("fx|83b53a61101cadfc".into());
    assert_eq!(
        codex_refresh_lock_path(&home, &key),
        home.join(
            "mcp-oauth-locks/73703a02550d136b47c06a201f54a78e3be116aa364004c6480aa3f008590004.lock"
        )
    );
    let held = lock_codex_refresh(&home, &key, GENEROUS).unwrap();
    // flock(1) cannot take it while we hold it, and can once we let go.
    let try_flock = || {
        Command::new("flock")
            .args(["-n", "-x"])
            .arg(codex_refresh_lock_path(&home, &key))
            .arg("true")
            .status()
            .expect("flock(1) (util-linux)")
            .success()
    };
    assert!(!try_flock(), "flock(1) took the lock we hold");
    drop(held);
    assert!(try_flock());
    // And we wait for flock(1), then give up as Busy.
    let (held_marker, release) = (tmp.path().join("held"), tmp.path().join("release"));
    let script = format!(
        "touch '{}'; while [ ! -e '{}' ]; do sleep 0.02; done",
        held_marker.display(),
        release.display()
    );
    let mut holder = Command::new("flock")
        .arg("-x")
        .arg(codex_refresh_lock_path(&home, &key))
        .args(["sh", "-c", &script])
        .spawn()
        .expect("flock(1) (util-linux)");
    let deadline = Instant::now() + GENEROUS;
    while !held_marker.exists() {
        assert!(Instant::now() < deadline, "flock(1) never held the lock");
        std::thread::sleep(Duration::from_millis(10));
    }
    let err = lock_codex_refresh(&home, &key, Duration::from_millis(100)).unwrap_err();
    assert!(
        err.to_string().contains("Codex held its refresh lock"),
        "{err}"
    );
    fs::write(&release, "").unwrap();
    assert!(holder.wait().unwrap().success());
    drop(lock_codex_refresh(&home, &key, GENEROUS).unwrap());
}
