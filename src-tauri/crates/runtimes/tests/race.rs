//! Our writer racing a process that rewrites `.credentials.json` the way Claude Code does, with
//! Patchbay healing what that process drops.
//!
//! Three processes share one file:
//! - this test's thread: our `ClaudeFileStore::write`, cycling over [`OUR_KEYS`] keys `pb-<k>|…`
//!   with a new pair each time (a later expiry: the latest value is the newest), each write
//!   followed by a healing pass ([`heal`]) against the latest value of every key written so far;
//! - a "claude-like" child: read the file, set one of its own keys `cc-<k>|…` to a new value,
//!   write `.credentials.json.tmp.<8 hex>` (O_EXCL, 0600) and replace the file, with NO lock and
//!   no re-read: Claude Code's unlocked read-modify-write;
//! - a reader child: reads the file in a loop and checks every read is a JSON object whose
//!   `claudeAiOauth` is intact.
//!
//! The other process drops our entries (or puts back an older value) whenever it read before one
//! of our replaces and renames after it. No writer can prevent that instant; Patchbay owns the
//! outcome: healing re-writes what it is responsible for. The healing here is called directly,
//! after each write and once more after the other process stopped, rather than through the
//! watcher: the property under test is the healing pass against the race, and calling it
//! deterministically makes the end state exact (the final pass runs after the last rename,
//! which with the watcher would need a wait for a debounce that a stream of several renames
//! per millisecond keeps postponing). The watcher running the same pass on each change, and its
//! loop guard, are tested in `watch.rs`.
//!
//! Asserted: every read valid JSON with `claudeAiOauth` intact; at the end every one of our
//! entries present with its latest value and `claudeAiOauth` intact. Reported, not asserted: the
//! other process's own losses (its entries not at its latest value at the end: Claude Code's own
//! race, which it repairs by re-writing its state), and how many of ours it dropped or reverted
//! (logged exactly by the child, which replaces with RENAME_EXCHANGE: to every reader the same
//! atomic replace as a rename, but it hands back the version replaced).
#![cfg(target_os = "linux")]

use chrono::{DateTime, Duration as ChronoDuration, Utc};
use patchbay_catalog::CredentialKey;
use patchbay_runtimes::claude::ClaudeFileStore;
use patchbay_runtimes::heal::heal;
use patchbay_runtimes::{RuntimeCredential, RuntimeError, RuntimeStore, WriteOutcome};
use patchbay_vault::Secret;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Our writes at most (cycling over [`OUR_KEYS`] keys), and the other process's.
const OUR_WRITES: usize = 3000;
const THEIR_WRITES: usize = 3000;
/// Distinct keys per side (each rewritten many times, as refreshes do).
const OUR_KEYS: usize = 40;
const THEIR_KEYS: usize = 40;
/// Each writer stops at this budget even short of its count (2 cores, a debug build).
const BUDGET: Duration = Duration::from_secs(12);
/// Hard cap on the whole race.
const CAP: Duration = Duration::from_secs(30);

fn user_block() -> Value {
    json!({"accessToken": "sk-ant-user", "refreshToken": "user-rt", "expiresAt": 1764000000000u64,
           "scopes": ["user:inference"], "subscriptionType": "max"})
}

fn key(prefix: &str, k: usize) -> String {
    format!("{prefix}-{k}|{k:016x}")
}

fn child(role: &str, file: &Path, extra: &[(&str, String)]) -> std::process::Child {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--exact",
        "race_child",
        "--ignored",
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

/// Our `i`-th write: key `i % OUR_KEYS`, a pair whose expiry grows with `i`.
fn our_credential(i: usize, base: DateTime<Utc>) -> RuntimeCredential {
    let k = i % OUR_KEYS;
    RuntimeCredential {
        key: CredentialKey(key("pb", k)),
        server_name: format!("pb-{k}"),
        server_url: "http://localhost:3100/mcp".into(),
        access_token: Secret::new(format!("at-{i}")),
        refresh_token: Some(Secret::new(format!("rt-{i}"))),
        expires_at: Some(base + ChronoDuration::seconds(i as i64)),
        scope: None,
        client_id: Some("patchbay".into()),
        client_secret: None,
        issuer: None,
    }
}

fn count(path: PathBuf) -> usize {
    fs::read_to_string(path).unwrap().trim().parse().unwrap()
}

#[test]
fn our_writer_races_a_claude_like_writer_and_heals_what_it_drops() {
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
    let drop_log = dir.path().join("dropped.log");
    let stop = dir.path().join("stop");
    let started = Instant::now();
    let deadline = (Utc::now() + ChronoDuration::from_std(BUDGET).unwrap()).timestamp_millis();

    let mut reader = child(
        "reader",
        &file,
        &[("RACE_STOP", stop.display().to_string())],
    );
    let mut claude = child(
        "claude",
        &file,
        &[
            ("RACE_LOG", drop_log.display().to_string()),
            ("RACE_DEADLINE", deadline.to_string()),
        ],
    );

    let store = ClaudeFileStore::at(&file);
    // An hour ahead, so that every pair is still valid while the race runs.
    let base = Utc::now() + ChronoDuration::hours(1);
    // What Patchbay is responsible for: the latest value of each key it wrote.
    let mut desired: BTreeMap<String, RuntimeCredential> = BTreeMap::new();
    let (mut ours_written, mut healed, mut passes, mut busy) = (0usize, 0usize, 0usize, 0usize);
    while ours_written < OUR_WRITES && started.elapsed() < BUDGET {
        let credential = our_credential(ours_written, base);
        assert_eq!(
            store.write(&credential, Utc::now()).unwrap(),
            WriteOutcome::Written
        );
        desired.insert(credential.key.0.clone(), credential);
        ours_written += 1;
        let want: Vec<RuntimeCredential> = desired.values().cloned().collect();
        let report = heal(&store, &want, Utc::now()).unwrap();
        // While the other writer rewrites the file in a tight loop, a pass may give up on an
        // entry as Busy (the file kept changing under it): retryable, and the next pass (the
        // watcher runs one on every rename) takes it up. Anything else is a failure.
        assert!(
            report
                .failed
                .iter()
                .all(|(_, e)| matches!(e, RuntimeError::Busy { .. }))
                && report.left_newer.is_empty(),
            "{report:?}"
        );
        busy += report.failed.len();
        healed += report.rewritten();
        passes += 1;
    }
    let ours_elapsed = started.elapsed();
    let claude_status = claude.wait().unwrap();
    assert!(claude_status.success(), "the claude-like writer failed");
    // The other process has stopped: the pass a watcher runs on its last rename.
    let want: Vec<RuntimeCredential> = desired.values().cloned().collect();
    let last = heal(&store, &want, Utc::now()).unwrap();
    assert!(
        last.failed.is_empty() && last.left_newer.is_empty(),
        "{last:?}"
    );
    healed += last.rewritten();
    // And the pass that our own last write triggers finds nothing to do.
    assert!(heal(&store, &want, Utc::now()).unwrap().is_noop());
    fs::write(&stop, b"").unwrap();
    let reader_status = reader.wait().unwrap();
    assert!(
        reader_status.success(),
        "a read saw invalid JSON or a damaged claudeAiOauth"
    );
    let elapsed = started.elapsed();

    let final_file: Value = serde_json::from_slice(&fs::read(&file).unwrap()).unwrap();
    assert_eq!(final_file["claudeAiOauth"], user_block());
    let oauth = final_file["mcpOAuth"].as_object().unwrap();
    let mut ours_wrong = Vec::new();
    for c in desired.values() {
        let entry = &oauth.get(c.key.as_str());
        let ok = entry.is_some_and(|e| {
            e["accessToken"] == c.access_token.expose()
                && e["refreshToken"] == c.refresh_token.as_ref().unwrap().expose()
                && e["expiresAt"] == c.expires_at.unwrap().timestamp_millis()
        });
        if !ok {
            ours_wrong.push((c.key.0.clone(), entry.cloned()));
        }
    }

    let theirs_written = count(dir.path().join("claude.count"));
    let reads = count(dir.path().join("reader.count"));
    let log = fs::read_to_string(&drop_log).unwrap_or_default();
    let (mut dropped_ours, mut reverted_ours, mut dropped_own) = (0, 0, 0);
    for line in log.lines() {
        match line.split_once(' ') {
            Some(("dropped", k)) if k.starts_with("pb-") => dropped_ours += 1,
            Some(("reverted", k)) if k.starts_with("pb-") => reverted_ours += 1,
            Some((_, k)) if k.starts_with("cc-") => dropped_own += 1,
            _ => {}
        }
    }
    // Its own entries not at its latest value at the end (its i-th write sets key i % THEIR_KEYS
    // to cc-at-i).
    let theirs_lost = (0..theirs_written.min(THEIR_KEYS))
        .filter(|&k| {
            let latest = (0..theirs_written)
                .rev()
                .find(|i| i % THEIR_KEYS == k)
                .unwrap();
            oauth
                .get(&key("cc", k))
                .is_none_or(|e| e["accessToken"] != format!("cc-at-{latest}"))
        })
        .count();
    eprintln!(
        "race: {elapsed:.1?} in all ({ours_elapsed:.1?} writing); ours {ours_written} writes over \
         {OUR_KEYS} keys + {passes} healing passes that re-wrote {healed} entries ({busy} deferred \
         as busy to the next pass); the other \
         process {theirs_written} writes over {THEIR_KEYS} keys; {reads} reads, all valid JSON \
         with claudeAiOauth intact. The other process's replaces dropped {dropped_ours} of our \
         entries and reverted {reverted_ours} to an older value (all healed: 0 of ours lost); its \
         own losses (Claude Code's race, not ours): {dropped_own} drops of its entries, \
         {theirs_lost} of its {} keys not at its latest value at the end",
        theirs_written.min(THEIR_KEYS)
    );
    assert!(
        ours_wrong.is_empty(),
        "{} of our entries lost or stale at the end: {:?}",
        ours_wrong.len(),
        &ours_wrong[..ours_wrong.len().min(5)]
    );
    assert!(
        ours_written + theirs_written >= 2000 && ours_written.min(theirs_written) >= 300,
        "too few writes to be a race: ours {ours_written}, theirs {theirs_written}"
    );
    assert!(
        dropped_ours + reverted_ours > 0,
        "the other process never dropped one of ours: not a race"
    );
    assert!(reads > 0);
    assert!(elapsed < CAP, "the race took {elapsed:?}");
}

/// The child processes' entry point, run by the race test with `--ignored`; ignored in a plain
/// run rather than counted as a passing test that checked nothing.
#[test]
#[ignore = "the race test's child processes' entry point (they run it with --ignored)"]
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
                std::thread::sleep(Duration::from_micros(500));
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
            for i in 0..THEIR_WRITES {
                if Utc::now().timestamp_millis() > deadline {
                    break;
                }
                claude_like_write(&file, i, &mut log);
                written += 1;
                // Two cores, three processes: leave our writer some CPU.
                std::thread::sleep(Duration::from_micros(500));
            }
            fs::write(dir.join("claude.count"), written.to_string()).unwrap();
        }
        other => panic!("unknown role {other}"),
    }
}

/// Claude Code's write: read, set its own key, temp file + replace, no lock, no re-read. Logs
/// what its replace dropped (`dropped <key>`) or put back to an older value (`reverted <key>`),
/// relative to the version it replaced.
fn claude_like_write(file: &Path, i: usize, log: &mut fs::File) {
    let mut root: Map<String, Value> = serde_json::from_slice(&fs::read(file).unwrap()).unwrap();
    let oauth = root
        .entry("mcpOAuth")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .unwrap();
    let k = i % THEIR_KEYS;
    oauth.insert(
        key("cc", k),
        json!({"serverName": format!("cc-{k}"), "serverUrl": "http://localhost:3100/mcp",
               "accessToken": format!("cc-at-{i}"), "expiresAt": 1764000000000u64 + i as u64}),
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
    for (k, old) in replaced["mcpOAuth"].as_object().unwrap() {
        match mine.get(k) {
            None => writeln!(log, "dropped {k}").unwrap(),
            Some(new) if new != old && !k.starts_with("cc-") => {
                writeln!(log, "reverted {k}").unwrap()
            }
            _ => {}
        }
    }
}
