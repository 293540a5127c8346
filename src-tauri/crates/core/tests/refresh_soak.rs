//! The refresher's soak: a simulated day of passes (every 30 minutes on an injected clock) over
//! hundreds of credentials against a loopback token endpoint that rotates refresh tokens, detects
//! reuse and fails every ninth request with a 503, while "Claude Code" rotates some of the
//! bridged ones by itself between passes. At the end no credential is lost (each vault refresh
//! token is its family's live one), no reuse was detected, and the figures are printed
//! (`cargo test -p patchbay-core --release --test refresh_soak -- --nocapture`).

mod support;

use chrono::DateTime;
use patchbay_catalog::{CatalogItem, CatalogSource, CredentialKey};
use patchbay_core::refresh::RefreshOutcome;
use patchbay_core::{Bridges, Patchbay, Paths, RefreshPolicy, Refresher};
use patchbay_runtimes::claude::ClaudeFileStore;
use patchbay_runtimes::config::RuntimePaths;
use patchbay_runtimes::{RuntimeCredential, RuntimeStore};
use patchbay_vault::{CredentialRow, Grant, MemoryStore, Secret, TokenSet};
use serde_json::json;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::rotating_as::RotatingAs;

const CREDENTIALS: usize = 300;
const BRIDGED: usize = 30;
const PASSES: usize = 48;
const T0: i64 = 1_800_000_000_000;

fn url(i: usize) -> String {
    format!("https://s{i:03}.example.test/mcp")
}

/// A small deterministic generator, so a failure replays.
struct Lcg(u64);
impl Lcg {
    fn next(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % n
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_day_of_passes_loses_nothing_and_never_reuses_a_token() {
    let ras = RotatingAs::start().await;
    ras.fail_every_nth_with_503(Some(9));
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();

    let servers: serde_json::Map<String, serde_json::Value> = (0..CREDENTIALS)
        .map(|i| (format!("s{i:03}"), json!({"type": "http", "url": url(i)})))
        .collect();
    let catalog_file = root.join("catalog.json");
    std::fs::write(&catalog_file, json!({ "mcpServers": servers }).to_string()).unwrap();
    let home = root.join("home");
    let runtime_paths = RuntimePaths::resolve(&home, &|_| None);
    std::fs::create_dir_all(&runtime_paths.claude_config_dir).unwrap();
    let claude_servers: serde_json::Map<String, serde_json::Value> = (0..BRIDGED)
        .map(|i| (format!("s{i:03}"), json!({"type": "http", "url": url(i)})))
        .collect();
    std::fs::write(
        &runtime_paths.claude_json,
        json!({ "mcpServers": claude_servers }).to_string(),
    )
    .unwrap();

    let clock = Arc::new(AtomicI64::new(T0));
    let c = clock.clone();
    let patchbay = Arc::new(
        Patchbay::with_store(
            Paths {
                config_dir: root.join("config"),
                data_dir: root.join("data"),
                default_catalog: CatalogSource::Embedded,
                catalog_override: Some(catalog_file),
                keychain_account: "soak".into(),
            },
            Arc::new(MemoryStore::new()),
        )
        .unwrap()
        .with_clock(Arc::new(move || {
            DateTime::from_timestamp_millis(c.load(Ordering::SeqCst)).unwrap()
        })),
    );
    let now = patchbay.now();
    let mut rng = Lcg(7);
    let keys: Vec<CredentialKey> = patchbay
        .catalog()
        .items
        .iter()
        .map(|item| match item {
            CatalogItem::Server(e) => e.credential_key(&|_| None).unwrap().unwrap(),
            CatalogItem::Invalid(i) => panic!("invalid test entry: {i:?}"),
        })
        .collect();
    let names: Vec<String> = (0..CREDENTIALS).map(|i| format!("s{i:03}")).collect();
    for (i, key) in keys.iter().enumerate() {
        let family = &names[i];
        patchbay
            .vault()
            .put_credential(
                &CredentialRow {
                    credential_key: key.clone(),
                    server_name: family.clone(),
                    server_url: Some(url(i)),
                    // Obtained at various times with the server's one-hour lifetime, like the pairs
                    // it mints later ("newer" is a later expiry, which needs a steady lifetime).
                    expires_at: Some(now + chrono::Duration::minutes(rng.next(60) as i64)),
                    has_refresh_token: true,
                    one_shot: false,
                    issuer: Some(ras.base.clone()),
                    client_id: Some("cid".into()),
                    scope: None,
                    updated_at: now - chrono::Duration::hours(5),
                    rotated_by: None,
                    rotated_at: None,
                },
                &TokenSet {
                    access_token: Secret::new(format!("at-{family}-0")),
                    refresh_token: Some(Secret::new(ras.seed(family))),
                },
            )
            .unwrap();
        patchbay
            .vault()
            .put_grant(&Grant {
                credential_key: key.clone(),
                issuer: ras.base.clone(),
                token_endpoint: ras.token_endpoint(),
                token_auth_method: "none".into(),
                client_id: "cid".into(),
                client_secret: None,
                client_registered: false,
                redirect_uri: "http://localhost:3118/callback".into(),
                resource: Some(url(i)),
                scopes: None,
            })
            .unwrap();
    }

    let bridges = Arc::new(Bridges::with_paths(
        patchbay.clone(),
        Some(runtime_paths.clone()),
    ));
    let runtime_keys: Vec<CredentialKey> = (0..BRIDGED)
        .map(|i| {
            bridges
                .bridged()
                .into_iter()
                .find(|b| b.connector == names[i])
                .and_then(|b| b.credential_key)
                .unwrap()
        })
        .collect();
    let claude = ClaudeFileStore::new(&runtime_paths);
    let refresher = Refresher::new(
        patchbay.clone(),
        Some(bridges),
        RefreshPolicy {
            http_timeout: Duration::from_secs(5),
            ..RefreshPolicy::default()
        },
    );

    let (mut refreshed, mut adopted, mut failed, mut skipped, mut runtime_rotations) =
        (0, 0, 0, 0, 0);
    let mut pass_times = Vec::with_capacity(PASSES);
    for _ in 0..PASSES {
        // Claude Code refreshes three bridged credentials by itself, writing its own store.
        for _ in 0..3 {
            let i = rng.next(BRIDGED);
            let (access, refresh) = ras.rotate_elsewhere(&names[i]);
            let at = patchbay.now();
            claude
                .write(
                    &RuntimeCredential {
                        key: runtime_keys[i].clone(),
                        server_name: names[i].clone(),
                        server_url: url(i),
                        access_token: Secret::new(access),
                        refresh_token: Some(Secret::new(refresh)),
                        expires_at: Some(at + chrono::Duration::hours(1)),
                        scope: None,
                        client_id: Some("cid".into()),
                        client_secret: None,
                        issuer: None,
                    },
                    at - chrono::Duration::hours(3),
                )
                .unwrap();
            runtime_rotations += 1;
        }
        let started = Instant::now();
        let report = refresher.pass().await.unwrap();
        pass_times.push(started.elapsed());
        refreshed += report.refreshed;
        adopted += report.adopted;
        failed += report.failed;
        skipped += report.skipped;
        for r in &report.results {
            if let RefreshOutcome::Failed { class, .. } = &r.outcome {
                assert_eq!(
                    *class,
                    patchbay_oauth::RefreshClass::Transient,
                    "{}: {:?}; presented {:?}; history {:#?}",
                    r.connector,
                    r.outcome,
                    ras.presented()
                        .into_iter()
                        .filter(|t| t.contains(&r.connector))
                        .collect::<Vec<_>>(),
                    refresher.history(&r.connector).unwrap()
                );
            }
        }
        clock.fetch_add(30 * 60 * 1000, Ordering::SeqCst);
    }

    // Nothing lost: every credential still renewable, holding its family's live refresh token.
    let rows = patchbay.vault().credential_rows().unwrap();
    assert_eq!(rows.len(), CREDENTIALS);
    assert!(patchbay.vault().refresh_answers_lost().unwrap().is_empty());
    let mut stale = Vec::new();
    for (i, key) in keys.iter().enumerate() {
        let tokens = patchbay.vault().credential_tokens(key).unwrap().unwrap();
        let ours = tokens.refresh_token.map(|t| t.expose().to_string());
        let live = ras.current(&names[i]);
        assert!(
            live.is_some(),
            "{}: the server revoked the family",
            names[i]
        );
        // A credential Claude Code rotated after our last pass is adopted on the next one; the
        // pair it holds is then the live one.
        if ours != live {
            let theirs = (i < BRIDGED)
                .then(|| claude.read(&runtime_keys[i]).unwrap())
                .flatten()
                .and_then(|c| c.refresh_token)
                .map(|t| t.expose().to_string());
            if theirs != live {
                stale.push(names[i].clone());
            }
        }
    }
    assert!(stale.is_empty(), "credentials lost: {stale:?}");
    assert_eq!(ras.reuse_detected(), 0);
    assert!(
        refreshed > CREDENTIALS,
        "every credential renewed more than once"
    );
    assert!(adopted > 0 && failed > 0);

    let total: Duration = pass_times.iter().sum();
    let max = pass_times.iter().max().unwrap();
    println!(
        "soak: {PASSES} passes over {CREDENTIALS} credentials ({BRIDGED} bridged to Claude Code): \
         {refreshed} refreshed, {adopted} adopted from {runtime_rotations} runtime rotations, \
         {failed} transient failures (503) retried next pass, {skipped} skipped; \
         {} token requests; time per pass mean {:.1} ms, max {:.1} ms; reuse detected: {}",
        ras.presented().len(),
        total.as_secs_f64() * 1000.0 / PASSES as f64,
        max.as_secs_f64() * 1000.0,
        ras.reuse_detected()
    );
}
