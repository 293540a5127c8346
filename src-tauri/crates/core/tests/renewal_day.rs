//! A simulated day with 1-hour tokens: Patchbay renews every credential before Claude Code or
//! Codex would refresh it by itself, so a rotating refresh token is never held by two refreshers.
//!
//! On an injected clock, 20 credentials from a loopback authorization server that rotates
//! refresh tokens, detects reuse (and then revokes the family) and mints 1-hour tokens, each
//! bridged to both Claude Code and Codex (their real file stores in a temporary home). The
//! runtimes are simulated by their own rules (the reference's "It refreshes by itself"): Claude
//! Code refreshes when 300 s or less remain, Codex 30 s, each with the pair in its own store,
//! writing the rotated pair back there. The clock steps from event to event: the schedule's own
//! next wake ([`RenewalTimer`]) or a runtime's window opening, whichever comes first; a wake
//! runs a real pass. After 24 h: no runtime refreshed, no refresh token was presented twice, no
//! credential needs authorizing again. The same day with a token endpoint that answers every
//! 7th request 503: retried (held back, never spinning), still ahead of the runtimes. Figures are
//! printed (`cargo test -p patchbay-core --test renewal_day -- --nocapture`).

mod support;

use chrono::{DateTime, Utc};
use patchbay_catalog::{CatalogItem, CatalogSource, CredentialKey};
use patchbay_core::schedule::{PassReason, RenewalTimer, DEFAULT_INTERVAL};
use patchbay_core::{Bridges, Patchbay, Paths, RefreshPolicy, Refresher};
use patchbay_runtimes::claude::ClaudeFileStore;
use patchbay_runtimes::codex::CodexFileStore;
use patchbay_runtimes::config::RuntimePaths;
use patchbay_runtimes::{RuntimeCredential, RuntimeStore};
use patchbay_vault::{CredentialRow, Grant, MemoryStore, Secret, TokenSet};
use serde_json::json;
use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::rotating_as::RotatingAs;

const CREDENTIALS: usize = 20;
const T0: i64 = 1_800_000_000_000;
const DAY: chrono::Duration = chrono::Duration::hours(24);
/// Claude Code refreshes by itself when this or less remains (reference, measured on 2.1.332).
const CLAUDE_WINDOW: chrono::Duration = chrono::Duration::seconds(300);
/// Codex refreshes 30 s before expiry (reference, measured on 0.171.0).
const CODEX_WINDOW: chrono::Duration = chrono::Duration::seconds(30);

fn url(i: usize) -> String {
    format!("https://d{i:02}.example.test/mcp")
}

fn name(i: usize) -> String {
    format!("d{i:02}")
}

/// A runtime as simulated: its store, its window, what it did.
struct SimRuntime {
    label: &'static str,
    store: Box<dyn RuntimeStore>,
    window: chrono::Duration,
    refreshes: usize,
    refused: usize,
}

impl SimRuntime {
    /// When this runtime would next refresh any credential by itself: the earliest time its
    /// window opens over the entries it holds with a refresh token.
    fn next_window(&self, keys: &[CredentialKey]) -> Option<DateTime<Utc>> {
        keys.iter()
            .filter_map(|k| self.store.read(k).unwrap())
            .filter(|c| c.refresh_token.is_some())
            .filter_map(|c| c.expires_at)
            .map(|at| at - self.window)
            .min()
    }

    /// The runtime's own proactive refresh of every entry whose window is open at `now`, with
    /// the pair in its store, writing the rotated pair back as the runtime would.
    async fn act(&mut self, keys: &[CredentialKey], now: DateTime<Utc>, token_endpoint: &str) {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()
            .unwrap();
        for key in keys {
            let Some(entry) = self.store.read(key).unwrap() else {
                continue;
            };
            let (Some(refresh), Some(expires_at)) = (&entry.refresh_token, entry.expires_at) else {
                continue;
            };
            if expires_at - self.window > now {
                continue;
            }
            self.refreshes += 1;
            let answer = http
                .post(token_endpoint)
                .form(&[
                    ("grant_type", "refresh_token"),
                    ("refresh_token", refresh.expose()),
                    ("client_id", entry.client_id.as_deref().unwrap_or("")),
                    ("resource", entry.server_url.as_str()),
                ])
                .send()
                .await
                .unwrap();
            if !answer.status().is_success() {
                // Refused (the token was spent elsewhere): the runtime strips its entry.
                self.refused += 1;
                self.store.remove(key).unwrap();
                continue;
            }
            let body: serde_json::Value = answer.json().await.unwrap();
            let rotated = RuntimeCredential {
                access_token: Secret::new(body["access_token"].as_str().unwrap()),
                refresh_token: body["refresh_token"].as_str().map(Secret::new),
                expires_at: Some(
                    now + chrono::Duration::seconds(body["expires_in"].as_i64().unwrap()),
                ),
                ..entry
            };
            self.store.write(&rotated, now).unwrap();
        }
    }
}

/// What a simulated day did.
struct Day {
    passes: usize,
    refreshed: usize,
    failed: usize,
    runtime_refreshes: usize,
    /// Token requests, and how many of them presented a refresh token already presented.
    requests: usize,
    presented_again: usize,
    reuse_detected: usize,
    /// Credentials that need authorizing again (no refresh token, a revoked family, or a vault
    /// token that is not the family's live one).
    reauth: Vec<String>,
    /// Runtime entries not holding the family's live refresh token.
    stale_in_runtimes: Vec<String>,
}

/// A day of `credentials` 1-hour tokens bridged to both runtimes; the server answers every
/// `every_nth_503`-th token request with a 503 when set.
async fn simulate_day(credentials: usize, every_nth_503: Option<usize>) -> Day {
    let started = Instant::now();
    let ras = RotatingAs::start().await;
    ras.set_expires_in(3600);
    ras.fail_every_nth_with_503(every_nth_503);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();

    let servers: serde_json::Map<String, serde_json::Value> = (0..credentials)
        .map(|i| (name(i), json!({"type": "http", "url": url(i)})))
        .collect();
    let catalog_file = root.join("catalog.json");
    std::fs::write(&catalog_file, json!({ "mcpServers": servers }).to_string()).unwrap();
    // Both runtimes configured with every server (Codex with its file store).
    let home = root.join("home");
    let runtime_paths = RuntimePaths::resolve(&home, &|_| None);
    std::fs::create_dir_all(&runtime_paths.claude_config_dir).unwrap();
    std::fs::write(
        &runtime_paths.claude_json,
        json!({ "mcpServers": servers }).to_string(),
    )
    .unwrap();
    std::fs::create_dir_all(&runtime_paths.codex_home).unwrap();
    let mut codex_config = String::from("mcp_oauth_credentials_store = \"file\"\n");
    for i in 0..credentials {
        codex_config.push_str(&format!(
            "\n[mcp_servers.{}]\nurl = \"{}\"\n",
            name(i),
            url(i)
        ));
    }
    std::fs::write(runtime_paths.codex_config(), codex_config).unwrap();

    let clock = Arc::new(AtomicI64::new(T0));
    let c = clock.clone();
    let patchbay = Arc::new(
        Patchbay::with_store(
            Paths {
                config_dir: root.join("config"),
                data_dir: root.join("data"),
                default_catalog: CatalogSource::Embedded,
                catalog_override: Some(catalog_file),
                keychain_account: "day".into(),
            },
            Arc::new(MemoryStore::new()),
        )
        .unwrap()
        .with_clock(Arc::new(move || {
            DateTime::from_timestamp_millis(c.load(Ordering::SeqCst)).unwrap()
        })),
    );
    let t0 = patchbay.now();
    let keys: Vec<CredentialKey> = patchbay
        .catalog()
        .items
        .iter()
        .map(|item| match item {
            CatalogItem::Server(e) => e.credential_key(&|_| None).unwrap().unwrap(),
            CatalogItem::Invalid(i) => panic!("invalid test entry: {i:?}"),
        })
        .collect();
    assert_eq!(keys.len(), credentials);
    for (i, key) in keys.iter().enumerate() {
        let family = name(i);
        // Authorized at staggered times in the last 50 minutes, with the server's 1-hour life.
        let stored = t0 - chrono::Duration::seconds((i as i64 * 150) % 3000);
        patchbay
            .vault()
            .put_credential(
                &CredentialRow {
                    credential_key: key.clone(),
                    server_name: family.clone(),
                    server_url: Some(url(i)),
                    expires_at: Some(stored + chrono::Duration::hours(1)),
                    has_refresh_token: true,
                    one_shot: false,
                    issuer: Some(ras.base.clone()),
                    client_id: Some("cid".into()),
                    scope: None,
                    updated_at: stored,
                    rotated_by: None,
                    rotated_at: None,
                },
                &TokenSet {
                    access_token: Secret::new(format!("at-{family}-0")),
                    refresh_token: Some(Secret::new(ras.seed(&family))),
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
    // Every credential bridged to both runtimes, their stores holding our pair.
    let bridged = bridges.bridged();
    assert_eq!(bridged.len(), 2 * credentials, "{bridged:#?}");
    assert_eq!(bridges.sync().unwrap().len(), credentials);
    let runtime_keys: Vec<CredentialKey> = bridged
        .iter()
        .filter_map(|b| b.credential_key.clone())
        .collect::<HashSet<_>>()
        .into_iter()
        .collect();
    let mut runtimes = [
        SimRuntime {
            label: "Claude Code",
            store: Box::new(ClaudeFileStore::new(&runtime_paths)),
            window: CLAUDE_WINDOW,
            refreshes: 0,
            refused: 0,
        },
        SimRuntime {
            label: "Codex",
            store: Box::new(CodexFileStore::new(&runtime_paths)),
            window: CODEX_WINDOW,
            refreshes: 0,
            refused: 0,
        },
    ];
    for runtime in &runtimes {
        assert_eq!(
            runtime.store.read_all().unwrap().len(),
            credentials,
            "{}",
            runtime.label
        );
    }

    let policy = RefreshPolicy {
        http_timeout: Duration::from_secs(5),
        ..RefreshPolicy::default()
    };
    let refresher = Refresher::new(patchbay.clone(), Some(bridges), policy.clone());
    let set_clock = |at: DateTime<Utc>| clock.store(at.timestamp_millis(), Ordering::SeqCst);
    let rows = || patchbay.vault().credential_rows().unwrap();

    // The start-up pass, then the schedule's wakes and the runtimes' windows, in time order.
    let mut wakes: BTreeMap<String, usize> = BTreeMap::new();
    let (mut passes, mut refreshed, mut adopted, mut failed) = (0, 0, 0, 0);
    let mut timer = RenewalTimer::new(DEFAULT_INTERVAL, policy.renewal(), t0);
    let mut reason = PassReason::Startup;
    let end = t0 + DAY;
    loop {
        let report = refresher.pass().await.unwrap();
        passes += 1;
        *wakes.entry(format!("{reason:?}")).or_default() += 1;
        refreshed += report.refreshed;
        adopted += report.adopted;
        failed += report.failed + report.skipped;
        timer.passed(patchbay.now(), &rows());

        // Until the schedule's next wake, the runtimes act whenever their windows open.
        let wake = loop {
            let now = patchbay.now();
            let wake = timer.next_wake(now, &rows());
            let window = runtimes
                .iter()
                .filter_map(|r| r.next_window(&runtime_keys))
                .min();
            match window {
                // A tie goes to the schedule.
                Some(at) if at < wake.at && at <= end => {
                    set_clock(at.max(now));
                    for runtime in &mut runtimes {
                        runtime
                            .act(&runtime_keys, patchbay.now(), &ras.token_endpoint())
                            .await;
                    }
                }
                _ => break wake,
            }
        };
        if wake.at > end {
            break;
        }
        set_clock(wake.at.max(patchbay.now()));
        reason = wake.reason;
        assert!(passes < 20_000, "the schedule spins: {passes} passes");
    }

    // Figures.
    let presented = ras.presented();
    let distinct: HashSet<&String> = presented.iter().collect();
    let runtime_refreshes: usize = runtimes.iter().map(|r| r.refreshes).sum();
    let runtime_refused: usize = runtimes.iter().map(|r| r.refused).sum();
    let mut reauth = Vec::new();
    for (i, key) in keys.iter().enumerate() {
        let row = patchbay.vault().credential_row(key).unwrap().unwrap();
        let ours = patchbay
            .vault()
            .credential_tokens(key)
            .unwrap()
            .and_then(|t| t.refresh_token)
            .map(|t| t.expose().to_string());
        let live = ras.current(&name(i));
        let answer_lost = patchbay.vault().is_refresh_answer_lost(key).unwrap();
        if !row.has_refresh_token || answer_lost || live.is_none() || ours != live {
            reauth.push(name(i));
        }
    }
    println!(
        "renewal day: {credentials} credentials with 1-hour tokens, bridged to Claude Code and \
         Codex, over 24 h: {passes} passes (wakes {wakes:?}), {refreshed} refreshed by Patchbay, \
         {adopted} adopted, {failed} failed or skipped; runtime refreshes: {} ({runtime_refused} \
         refused); token requests {}, refresh tokens presented twice: {}, reuse detected: {}; \
         re-authorizations needed: {}; wall time {:.1} s",
        runtimes
            .iter()
            .map(|r| format!("{} {}", r.label, r.refreshes))
            .collect::<Vec<_>>()
            .join(", "),
        presented.len(),
        presented.len() - distinct.len(),
        ras.reuse_detected(),
        reauth.len(),
        started.elapsed().as_secs_f64()
    );

    // The runtimes hold the live pair Patchbay wrote through (else they would present a dead one).
    let mut stale_in_runtimes = Vec::new();
    for runtime in &runtimes {
        for (i, key) in keys.iter().enumerate() {
            let runtime_key = bridged
                .iter()
                .find(|b| b.vault_key.as_ref() == Some(key))
                .and_then(|b| b.credential_key.clone())
                .unwrap();
            let theirs = runtime
                .store
                .read(&runtime_key)
                .unwrap()
                .and_then(|c| c.refresh_token)
                .map(|t| t.expose().to_string());
            if theirs != ras.current(&name(i)) {
                stale_in_runtimes.push(format!("{}: {}", runtime.label, name(i)));
            }
        }
    }
    Day {
        passes,
        refreshed,
        failed,
        runtime_refreshes,
        requests: presented.len(),
        presented_again: presented.len() - distinct.len(),
        reuse_detected: ras.reuse_detected(),
        reauth,
        stale_in_runtimes,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_day_of_one_hour_tokens_is_renewed_before_any_runtime_refreshes_by_itself() {
    let day = simulate_day(CREDENTIALS, None).await;
    assert_eq!(
        day.runtime_refreshes, 0,
        "a runtime found its token inside its own refresh window"
    );
    assert_eq!(
        day.presented_again, 0,
        "a refresh token was presented twice"
    );
    assert_eq!(day.reuse_detected, 0);
    assert!(
        day.reauth.is_empty(),
        "needs authorizing again: {:?}",
        day.reauth
    );
    assert_eq!(day.failed, 0);
    assert!(
        day.stale_in_runtimes.is_empty(),
        "{:?}",
        day.stale_in_runtimes
    );
    // Every credential renewed about every half hour (its half-life), not once it had lapsed.
    assert!(
        day.refreshed >= CREDENTIALS * 46,
        "{} refreshes for {CREDENTIALS} credentials over 24 h",
        day.refreshed
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flaky_token_endpoint_is_retried_without_spinning_and_still_ahead_of_the_runtimes() {
    // Every 7th request answered 503: the token is kept, the timer holds the credential back
    // (2 min, doubling) and tries again, still before the runtimes' windows.
    let credentials = CREDENTIALS / 2;
    let day = simulate_day(credentials, Some(7)).await;
    assert!(day.failed > 0, "no failure was injected");
    assert_eq!(day.runtime_refreshes, 0);
    // A 503 spends nothing, so presenting that token again is no reuse; a spent one never is.
    assert_eq!(day.reuse_detected, 0);
    assert!(
        day.reauth.is_empty(),
        "needs authorizing again: {:?}",
        day.reauth
    );
    assert!(
        day.stale_in_runtimes.is_empty(),
        "{:?}",
        day.stale_in_runtimes
    );
    assert_eq!(day.requests, day.refreshed + day.failed);
    // Bounded: about one pass per renewal and per retry, no hot loop.
    assert!(
        day.passes <= day.requests + 50,
        "{} passes for {} token requests",
        day.passes,
        day.requests
    );
}
