//! The time from Claude Code's rename of its credential file to Patchbay's adoption of the
//! rotated pair in the vault, through the real store ([`ClaudeFileStore`] on Claude Code's
//! `.credentials.json` format), the real watcher (notify: the rename's
//! own event starts the pass, nothing debounced) and the real reconciler, into a real vault (SQLite, WAL; its master key in a `MemoryStore`).
//!
//! One sample plays Claude Code after a refresh: read `.credentials.json`, put the rotated pair
//! (`accessToken`, `refreshToken`, `expiresAt` in ms) in its `mcpOAuth` entry, write
//! `.credentials.json.tmp.<8 hex>` (0600) and rename it over the file. The clock starts before
//! the read, so the figure includes that write; it ends when the watcher's callback reports the
//! adoption, which runs after the adopted pair is committed to the vault. Samples are sequential:
//! each waits for the previous adoption. A custom harness, because the figure of interest is the
//! distribution (median, p95, worst), not a mean.
//!
//! `cargo bench -p patchbay-runtimes --bench adoption` (ADOPTION_SAMPLES overrides 200).

use chrono::{DateTime, Utc};
use patchbay_catalog::CredentialKey;
use patchbay_runtimes::claude::ClaudeFileStore;
use patchbay_runtimes::reconcile::Reconciler;
use patchbay_runtimes::watch::{same_keys, watch, Watched, SETTLE};
use patchbay_runtimes::{Runtime, RuntimeCredential, RuntimeStore};
use patchbay_vault::{CredentialRow, MemoryStore, Secret, TokenSet, Vault};
use serde_json::{json, Value};
use std::path::Path;
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

const KEY: &str = "fx|528e1818a7ba21cf";

fn pair(n: u32, expires_at: DateTime<Utc>) -> RuntimeCredential {
    RuntimeCredential {
        key: CredentialKey(KEY.into()),
        server_name: "fx".into(),
        server_url: "http://localhost:3100/mcp".into(),
        access_token: Secret::new(format!("at-{n}")),
        refresh_token: Some(Secret::new(format!("rt-{n}"))),
        expires_at: Some(expires_at),
        scope: None,
        client_id: Some("c".into()),
        client_secret: None,
        issuer: None,
    }
}

/// Claude Code's write of a refreshed pair: read, change its entry, temp file, rename.
fn claude_rotates(path: &Path, n: u32, expires_at: DateTime<Utc>) {
    let mut root: Value =
        serde_json::from_slice(&std::fs::read(path).expect("read")).expect("JSON");
    let entry = &mut root["mcpOAuth"][KEY];
    entry["accessToken"] = json!(format!("at-{n}"));
    entry["refreshToken"] = json!(format!("rt-{n}"));
    entry["expiresAt"] = json!(expires_at.timestamp_millis());
    let tmp = path.with_file_name(format!(
        ".credentials.json.tmp.{:08x}",
        n.wrapping_mul(2_654_435_761)
    ));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(&tmp).expect("temp file");
    std::io::Write::write_all(&mut file, &serde_json::to_vec(&root).expect("JSON")).expect("write");
    drop(file);
    std::fs::rename(&tmp, path).expect("rename");
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let samples: u32 = std::env::var("ADOPTION_SAMPLES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200);
    let dir = tempfile::tempdir().expect("tempdir");
    let vault = Arc::new(
        Vault::open(
            &dir.path().join("v.db"),
            Arc::new(MemoryStore::new()),
            "bench",
        )
        .expect("vault"),
    );
    let base = Utc::now() + chrono::Duration::hours(1);
    vault
        .put_credential(
            &CredentialRow {
                credential_key: CredentialKey(KEY.into()),
                server_name: "fx".into(),
                server_url: Some("http://localhost:3100/mcp".into()),
                expires_at: Some(base),
                has_refresh_token: true,
                one_shot: false,
                issuer: None,
                client_id: Some("c".into()),
                scope: None,
                updated_at: Utc::now(),
                rotated_by: None,
                rotated_at: None,
            },
            &TokenSet {
                access_token: Secret::new("at-0"),
                refresh_token: Some(Secret::new("rt-0")),
            },
        )
        .expect("seed");
    let path = dir.path().join("claude/.credentials.json");
    std::fs::create_dir_all(path.parent().expect("dir")).expect("mkdir");
    // Claude Code's own login beside the MCP entry, as in a real file.
    std::fs::write(
        &path,
        json!({"claudeAiOauth": {"accessToken": "user-at", "refreshToken": "user-rt"}}).to_string(),
    )
    .expect("seed file");
    let store = Arc::new(ClaudeFileStore::at(&path));
    store.write(&pair(0, base), Utc::now()).expect("seed store");
    assert_eq!(store.runtime(), Runtime::ClaudeCode);

    let (tx, rx) = mpsc::channel();
    let _watch = watch(
        vault.clone(),
        Arc::new(Reconciler::new()),
        vec![Watched {
            store: store.clone(),
            keys: same_keys(),
        }],
        Arc::new(Utc::now),
        move |adopted| {
            let _ = tx.send((Instant::now(), adopted.len()));
        },
    )
    .expect("watch");
    // Let the seed's events settle.
    std::thread::sleep(SETTLE * 3);
    while rx.try_recv().is_ok() {}

    let mut times = Vec::with_capacity(samples as usize);
    let mut missed = 0;
    for n in 1..=samples {
        let started = Instant::now();
        claude_rotates(&path, n, base + chrono::Duration::seconds(i64::from(n)));
        match rx.recv_timeout(Duration::from_secs(5)) {
            Ok((at, _)) => times.push(at - started),
            Err(_) => missed += 1,
        }
    }
    let tokens = vault
        .credential_tokens(&CredentialKey(KEY.into()))
        .expect("read")
        .expect("stored");
    assert_eq!(tokens.access_token.expose(), format!("at-{samples}"));
    let file: Value = serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("JSON");
    assert_eq!(file["claudeAiOauth"]["accessToken"], "user-at");

    times.sort();
    let pick = |q: f64| times[((times.len() as f64 - 1.0) * q).round() as usize];
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "rename → adoption over {} renames: min {:.1} ms, median {:.1} ms, p95 {:.1} ms, worst {:.1} ms; missed (>5 s) {}",
        times.len(),
        ms(times[0]),
        ms(pick(0.5)),
        ms(pick(0.95)),
        ms(*times.last().expect("samples")),
        missed
    );
}
