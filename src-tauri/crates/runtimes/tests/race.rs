//! Our writer racing a process that rewrites `.credentials.json` the way Claude Code does.
//!
//! Three processes share one file:
//! - this test's thread: our `ClaudeFileStore::write`, N writes, each a different key `pb-<i>|…`;
//! - a "claude-like" child: N times, read the file, add its own key `cc-<i>|…`, write
//!   `.credentials.json.tmp.<8 hex>` (O_EXCL, 0600) and replace the file, with NO lock, exactly
//!   Claude Code's unlocked read-modify-write;
//! - a reader child: reads the file in a loop and checks every read is a JSON object whose
//!   `claudeAiOauth` is intact.
//!
//! What is guaranteed, and asserted:
//! - every read sees valid JSON with `claudeAiOauth` intact (both writers replace atomically);
//! - at the end `claudeAiOauth` is intact, and every entry missing at the end, ours or theirs,
//!   was dropped by a replace of the OTHER process (which logs exactly what each of its replaces
//!   dropped), never by ours: our writer re-reads right before its replace, and on Linux its
//!   RENAME_EXCHANGE hands back the version it replaced, so a version renamed in between is
//!   detected and merged back at once.
//!
//! What is NOT guaranteed (and so only counted): entries lost to the other process's unlocked
//! read-modify-write. It may read the file before one of our replaces and rename after it,
//! dropping our entry; or read it in the microseconds between our replacing an unseen version
//! of theirs and our merging it back, and so drop its own entry. That is Claude Code's own
//! lost-update race, which no writer of ours can prevent (it takes no lock); the reconciler
//! rewrites ours on its next pass. To attribute such drops exactly, the child replaces the file
//! with RENAME_EXCHANGE too (to every reader the same atomic replace as a rename) and logs the
//! keys present in the version it replaced but absent from its own.
#![cfg(target_os = "linux")]

use chrono::{Duration as ChronoDuration, Utc};
use patchbay_catalog::CredentialKey;
use patchbay_runtimes::claude::ClaudeFileStore;
use patchbay_runtimes::{RuntimeCredential, RuntimeStore, WriteOutcome};
use patchbay_vault::Secret;
use serde_json::{json, Map, Value};
use std::collections::BTreeSet;
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Writes per writer.
const N: usize = 2000;
/// Hard cap on the whole race.
const CAP: Duration = Duration::from_secs(60);

fn user_block() -> Value {
    json!({"accessToken": "sk-ant-user", "refreshToken": "user-rt", "expiresAt": 1764000000000u64,
           "scopes": ["user:inference"], "subscriptionType": "max"})
}

fn key(prefix: &str, i: usize) -> String {
    format!("{prefix}-{i}|{i:016x}")
}

fn child(role: &str, file: &Path, extra: &[(&str, String)]) -> std::process::Child {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--exact",
        "race_child",
        "--nocapture",
        "--test-threads",
        "1",
    ])
    .env("RACE_ROLE", role)
    .env("RACE_FILE", file)
    .stdout(Stdio::null());
    for (k, v) in extra {
        cmd.env(k, v);
    }
    cmd.spawn().unwrap()
}

#[test]
fn our_writer_races_a_claude_like_writer() {
    // tmpfs when there is one: the race is about renames, not about waiting for fsync.
    let dir = match Path::new("/dev/shm").is_dir() {
        true => tempfile::tempdir_in("/dev/shm").unwrap(),
        false => tempfile::tempdir().unwrap(),
    };
    let file = dir.path().join(".credentials.json");
    fs::write(
        &file,
        serde_json::to_vec(&json!({"claudeAiOauth": user_block(), "mcpOAuth": {}})).unwrap(),
    )
    .unwrap();
    let dropped_log = dir.path().join("dropped.log");
    let stop = dir.path().join("stop");
    let deadline = (Utc::now() + ChronoDuration::from_std(CAP).unwrap()).timestamp_millis();

    let mut reader = child(
        "reader",
        &file,
        &[("RACE_STOP", stop.display().to_string())],
    );
    let mut claude = child(
        "claude",
        &file,
        &[
            ("RACE_LOG", dropped_log.display().to_string()),
            ("RACE_DEADLINE", deadline.to_string()),
        ],
    );

    let store = ClaudeFileStore::at(&file);
    let started = Instant::now();
    let mut ours = Vec::new();
    for i in 0..N {
        if started.elapsed() > CAP {
            break;
        }
        let k = key("pb", i);
        let credential = RuntimeCredential {
            key: CredentialKey(k.clone()),
            server_name: format!("pb-{i}"),
            server_url: "http://localhost:3100/mcp".into(),
            access_token: Secret::new(format!("at-{i}")),
            refresh_token: None,
            expires_at: Some(Utc::now() + ChronoDuration::hours(1)),
            scope: None,
            client_id: None,
            client_secret: None,
            issuer: None,
        };
        assert_eq!(
            store.write(&credential, Utc::now()).unwrap(),
            WriteOutcome::Written
        );
        ours.push(k);
    }
    let ours_elapsed = started.elapsed();
    let claude_status = claude.wait().unwrap();
    fs::write(&stop, b"").unwrap();
    let reader_status = reader.wait().unwrap();
    assert!(claude_status.success(), "the claude-like writer failed");
    assert!(
        reader_status.success(),
        "a read saw invalid JSON or a damaged claudeAiOauth"
    );

    let final_file: Value = serde_json::from_slice(&fs::read(&file).unwrap()).unwrap();
    assert_eq!(final_file["claudeAiOauth"], user_block());
    let present: BTreeSet<&str> = final_file["mcpOAuth"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let theirs_written: usize = fs::read_to_string(dir.path().join("claude.count"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let reads: usize = fs::read_to_string(dir.path().join("reader.count"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let dropped_by_them: BTreeSet<String> = fs::read_to_string(&dropped_log)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect();

    let theirs_lost: Vec<String> = (0..theirs_written)
        .map(|i| key("cc", i))
        .filter(|k| !present.contains(k.as_str()))
        .collect();
    let ours_lost: Vec<&String> = ours
        .iter()
        .filter(|k| !present.contains(k.as_str()))
        .collect();
    eprintln!(
        "race: ours {} writes in {:?}, theirs {theirs_written}, {reads} reads all valid; \
         lost to the other process's unlocked read-modify-write: {} of ours, {} of its own",
        ours.len(),
        ours_elapsed,
        ours_lost.len(),
        theirs_lost.len()
    );
    let unexplained: Vec<&str> = ours_lost
        .iter()
        .map(|k| k.as_str())
        .chain(theirs_lost.iter().map(String::as_str))
        .filter(|k| !dropped_by_them.contains(*k))
        .collect();
    assert!(
        unexplained.is_empty(),
        "entries lost by a replace of OUR writer: {unexplained:?}"
    );
    assert!(
        ours.len() >= 500 && theirs_written >= 500,
        "too few writes to be a race"
    );
    assert!(reads > 0);
}

/// The child processes' entry point: a no-op unless spawned by the race test.
#[test]
fn race_child() {
    let Ok(role) = std::env::var("RACE_ROLE") else {
        return;
    };
    let file = PathBuf::from(std::env::var("RACE_FILE").unwrap());
    let dir = file.parent().unwrap().to_path_buf();
    match role.as_str() {
        "reader" => {
            let stop = PathBuf::from(std::env::var("RACE_STOP").unwrap());
            let mut reads = 0usize;
            while !stop.exists() {
                let bytes = fs::read(&file).unwrap();
                let value: Value = serde_json::from_slice(&bytes)
                    .unwrap_or_else(|e| panic!("read {reads}: invalid JSON: {e}"));
                assert_eq!(value["claudeAiOauth"], user_block(), "read {reads}");
                reads += 1;
                std::thread::sleep(Duration::from_micros(200));
            }
            fs::write(dir.join("reader.count"), reads.to_string()).unwrap();
        }
        "claude" => {
            let log = PathBuf::from(std::env::var("RACE_LOG").unwrap());
            let deadline: i64 = std::env::var("RACE_DEADLINE").unwrap().parse().unwrap();
            let mut log = OpenOptions::new()
                .create(true)
                .append(true)
                .open(log)
                .unwrap();
            let mut written = 0;
            for i in 0..N {
                if Utc::now().timestamp_millis() > deadline {
                    break;
                }
                claude_like_write(&file, i, &mut log);
                written += 1;
                // Two cores, three processes: leave our writer some CPU.
                std::thread::sleep(Duration::from_millis(1));
            }
            fs::write(dir.join("claude.count"), written.to_string()).unwrap();
        }
        other => panic!("unknown role {other}"),
    }
}

/// Claude Code's write: read, set its own key, temp file + replace, no lock, no re-read.
fn claude_like_write(file: &Path, i: usize, log: &mut fs::File) {
    let mut root: Map<String, Value> = serde_json::from_slice(&fs::read(file).unwrap()).unwrap();
    let oauth = root
        .entry("mcpOAuth")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .unwrap();
    oauth.insert(
        key("cc", i),
        json!({"serverName": format!("cc-{i}"), "serverUrl": "http://localhost:3100/mcp",
               "accessToken": format!("cc-at-{i}"), "expiresAt": 1764000000000u64}),
    );
    let bytes = serde_json::to_vec(&root).unwrap();
    let mut n = (std::process::id() as u64) << 32 | i as u64;
    let tmp = loop {
        let name = format!(
            ".credentials.json.tmp.{:08x}",
            (n.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as u32
        );
        let tmp = file.with_file_name(name);
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
        {
            Ok(mut f) => {
                f.write_all(&bytes).unwrap();
                break tmp;
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => n += 1,
            Err(e) => panic!("{e}"),
        }
    };
    // To readers this is a rename; the exchange only lets us see what we replaced.
    rustix::fs::renameat_with(
        rustix::fs::CWD,
        &tmp,
        rustix::fs::CWD,
        file,
        rustix::fs::RenameFlags::EXCHANGE,
    )
    .unwrap();
    let replaced: Value = serde_json::from_slice(&fs::read(&tmp).unwrap()).unwrap();
    fs::remove_file(&tmp).unwrap();
    let mine = &root["mcpOAuth"];
    for k in replaced["mcpOAuth"].as_object().unwrap().keys() {
        if mine.get(k).is_none() {
            writeln!(log, "{k}").unwrap();
        }
    }
}
