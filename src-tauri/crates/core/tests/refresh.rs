//! The refresher of record against a rotating token endpoint with reuse detection on
//! 127.0.0.1 (tests/support/rotating_as.rs): every failure class with an injected clock and an
//! injected retry sleeper, a lost answer (the token presented once more: renewed where the
//! server never ran the grant or has a reuse grace period, said as the cause where it did
//! not), the cross-process lock, a runtime's reported rejection, and Disconnect.

mod support;

use chrono::DateTime;
use patchbay_catalog::{CatalogItem, CatalogSource, CredentialKey};
use patchbay_core::refresh::{RefreshOutcome, RuntimeReportOutcome, Sleeper};
use patchbay_core::{Bridges, Patchbay, Paths, RefreshPolicy, Refresher, RetryPolicy};
use patchbay_oauth::RefreshClass;
use patchbay_runtimes::claude::ClaudeFileStore;
use patchbay_runtimes::config::RuntimePaths;
use patchbay_runtimes::Runtime;
use patchbay_runtimes::{RuntimeCredential, RuntimeStore};
use patchbay_status::ConnectorState;
use patchbay_vault::{CredentialRow, Grant, MemoryStore, Registration, Secret, TokenSet};
use serde_json::json;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::rotating_as::{Fault, RotatingAs};

const T0: i64 = 1_800_000_000_000;
const MCP_URL: &str = "https://mcp.example.test/mcp";

struct Rig {
    dir: tempfile::TempDir,
    patchbay: Arc<Patchbay>,
    refresher: Refresher,
    ras: RotatingAs,
    clock: Arc<AtomicI64>,
    store: Arc<MemoryStore>,
    key: CredentialKey,
    /// Every delay the retry sleeper was asked for.
    slept: Arc<Mutex<Vec<Duration>>>,
}

fn paths(dir: &std::path::Path) -> Paths {
    let file = dir.join("catalog.json");
    let catalog = json!({ "mcpServers": { "fx": { "type": "http", "url": MCP_URL } } });
    std::fs::write(&file, catalog.to_string()).unwrap();
    Paths {
        config_dir: dir.join("config"),
        data_dir: dir.join("data"),
        default_catalog: CatalogSource::Embedded,
        catalog_override: Some(file),
        keychain_account: "test".into(),
    }
}

fn open(dir: &std::path::Path, store: Arc<MemoryStore>, clock: Arc<AtomicI64>) -> Arc<Patchbay> {
    let c = clock.clone();
    Arc::new(
        Patchbay::with_store(paths(dir), store)
            .unwrap()
            .with_clock(Arc::new(move || {
                DateTime::from_timestamp_millis(c.load(Ordering::SeqCst)).unwrap()
            })),
    )
}

fn policy(slept: Arc<Mutex<Vec<Duration>>>, sleep_hook: Option<Sleeper>) -> RefreshPolicy {
    let sleep: Sleeper = Arc::new(move |d| {
        slept.lock().unwrap().push(d);
        match &sleep_hook {
            Some(hook) => hook(d),
            None => Box::pin(async {}),
        }
    });
    RefreshPolicy {
        http_timeout: Duration::from_millis(700),
        lock_timeout: Duration::from_secs(5),
        retry: RetryPolicy {
            sleep,
            ..RetryPolicy::default()
        },
        ..RefreshPolicy::default()
    }
}

async fn rig_on(ras: RotatingAs, token_endpoint: String, sleep_hook: Option<Sleeper>) -> Rig {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(AtomicI64::new(T0));
    let store = Arc::new(MemoryStore::new());
    let patchbay = open(dir.path(), store.clone(), clock.clone());
    let key = match &patchbay.catalog().items[0] {
        CatalogItem::Server(e) => e.credential_key(&|_| None).unwrap().unwrap(),
        CatalogItem::Invalid(_) => panic!("the test catalog is valid"),
    };
    let now = patchbay.now();
    patchbay
        .vault()
        .put_credential(
            &CredentialRow {
                credential_key: key.clone(),
                server_name: "fx".into(),
                server_url: Some(MCP_URL.into()),
                // Expires in 30 minutes; obtained 5 hours ago: due.
                expires_at: Some(now + chrono::Duration::minutes(30)),
                has_refresh_token: true,
                one_shot: false,
                issuer: Some(ras.base.clone()),
                client_id: Some("cid".into()),
                scope: Some("mcp:read".into()),
                updated_at: now - chrono::Duration::hours(5),
                rotated_by: None,
                rotated_at: None,
            },
            &TokenSet {
                access_token: Secret::new("at-fx-0"),
                refresh_token: Some(Secret::new(ras.seed("fx"))),
            },
        )
        .unwrap();
    patchbay
        .vault()
        .put_grant(&Grant {
            credential_key: key.clone(),
            issuer: ras.base.clone(),
            token_endpoint,
            token_auth_method: "none".into(),
            client_id: "cid".into(),
            client_secret: None,
            client_registered: true,
            redirect_uri: "http://localhost:3118/callback".into(),
            resource: Some(MCP_URL.into()),
            scopes: Some("mcp:read".into()),
        })
        .unwrap();
    let slept = Arc::new(Mutex::new(Vec::new()));
    let refresher = Refresher::new(patchbay.clone(), None, policy(slept.clone(), sleep_hook));
    Rig {
        dir,
        patchbay,
        refresher,
        ras,
        clock,
        store,
        key,
        slept,
    }
}

async fn rig() -> Rig {
    let ras = RotatingAs::start().await;
    let endpoint = ras.token_endpoint();
    rig_on(ras, endpoint, None).await
}

impl Rig {
    fn advance(&self, d: chrono::Duration) {
        self.clock.fetch_add(d.num_milliseconds(), Ordering::SeqCst);
    }

    fn row(&self) -> CredentialRow {
        self.patchbay.vault().credential_rows().unwrap().remove(0)
    }

    fn tokens(&self) -> TokenSet {
        self.patchbay
            .vault()
            .credential_tokens(&self.key)
            .unwrap()
            .unwrap()
    }

    fn refresh_token(&self) -> Option<String> {
        self.tokens().refresh_token.map(|t| t.expose().to_string())
    }

    fn state(&self) -> ConnectorState {
        self.patchbay.status().connectors[0].state
    }

    async fn pass_outcome(&self) -> RefreshOutcome {
        let report = self.refresher.pass().await.unwrap();
        report
            .results
            .into_iter()
            .next()
            .map(|r| r.outcome)
            .unwrap_or(RefreshOutcome::NotDue)
    }

    fn history(&self) -> Vec<patchbay_vault::RefreshAttempt> {
        self.refresher.history("fx").unwrap()
    }
}

fn failed_class(outcome: &RefreshOutcome) -> Option<RefreshClass> {
    match outcome {
        RefreshOutcome::Failed { class, .. } => Some(*class),
        _ => None,
    }
}

#[tokio::test]
async fn a_due_credential_is_rotated_persisted_and_then_left_alone() {
    let rig = rig().await;
    let outcome = rig.pass_outcome().await;
    assert!(
        matches!(outcome, RefreshOutcome::Refreshed { retries: 0, .. }),
        "{outcome:?}"
    );
    assert_eq!(rig.tokens().access_token.expose(), "at-fx-1");
    assert_eq!(rig.refresh_token().as_deref(), Some("rt-fx-1"));
    let row = rig.row();
    assert_eq!(
        row.expires_at,
        Some(rig.patchbay.now() + chrono::Duration::hours(1))
    );
    // The same resource as the grant, no scope ("as granted"), and the public client's id.
    let form = &rig.ras.forms()[0];
    assert_eq!(form["resource"], MCP_URL);
    assert_eq!(form.get("scope"), None);
    assert_eq!(form["client_id"], "cid");
    assert_eq!(rig.history()[0].outcome, "refreshed");

    // A 1-hour token, just renewed: left alone until half its life...
    rig.advance(chrono::Duration::minutes(29));
    assert_eq!(rig.pass_outcome().await, RefreshOutcome::NotDue);
    // ...then renewed, long before a runtime's own window opens (the old 4-hour throttle held
    // a 1-hour token until it had expired, after Claude Code and Codex refreshed it themselves).
    rig.advance(chrono::Duration::minutes(1));
    assert!(matches!(
        rig.pass_outcome().await,
        RefreshOutcome::Refreshed { .. }
    ));
    assert_eq!(rig.refresh_token().as_deref(), Some("rt-fx-2"));
    // Expired: refreshed at once.
    rig.advance(chrono::Duration::minutes(61));
    assert!(matches!(
        rig.pass_outcome().await,
        RefreshOutcome::Refreshed { .. }
    ));
    assert_eq!(rig.refresh_token().as_deref(), Some("rt-fx-3"));
    assert_eq!(rig.ras.reuse_detected(), 0);
}

#[tokio::test]
async fn a_refused_connection_is_retried_in_band_and_succeeds_once_the_server_is_up() {
    // A free port with nothing listening: refused until the sleeper starts the server there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let started: Arc<Mutex<Option<RotatingAs>>> = Arc::new(Mutex::new(None));
    let calls = Arc::new(AtomicI64::new(0));
    let (s, c) = (started.clone(), calls.clone());
    let hook: Sleeper = Arc::new(move |_d| {
        let (s, c) = (s.clone(), c.clone());
        Box::pin(async move {
            // Up before the third attempt.
            if c.fetch_add(1, Ordering::SeqCst) == 1 {
                let server = RotatingAs::start_on(port).await;
                server.seed("fx");
                *s.lock().unwrap() = Some(server);
            }
        })
    });
    // The seeded family lives on the late server; seed the rig's own too for the vault's token.
    let ras = RotatingAs::start().await;
    let rig = rig_on(ras, format!("http://127.0.0.1:{port}/token"), Some(hook)).await;
    let outcome = rig.pass_outcome().await;
    assert!(
        matches!(outcome, RefreshOutcome::Refreshed { retries: 2, .. }),
        "{outcome:?}"
    );
    let late = started.lock().unwrap().take().unwrap();
    assert_eq!(late.presented(), vec!["rt-fx-0".to_string()]);
    // 500 ms, then 1 s, each within ±30 %.
    let slept = rig.slept.lock().unwrap().clone();
    assert_eq!(slept.len(), 2);
    assert!(slept[0] >= Duration::from_millis(350) && slept[0] <= Duration::from_millis(650));
    assert!(slept[1] >= Duration::from_millis(700) && slept[1] <= Duration::from_millis(1300));
    assert_eq!(rig.history()[0].retries, 2);
}

#[tokio::test]
async fn a_server_that_stays_unreachable_costs_three_retries_and_keeps_the_token() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let ras = RotatingAs::start().await;
    let rig = rig_on(ras, format!("http://127.0.0.1:{port}/token"), None).await;
    let outcome = rig.pass_outcome().await;
    assert!(
        matches!(
            outcome,
            RefreshOutcome::Failed {
                class: RefreshClass::Retryable,
                retries: 3,
                ..
            }
        ),
        "{outcome:?}"
    );
    assert_eq!(rig.slept.lock().unwrap().len(), 3);
    assert_eq!(rig.refresh_token().as_deref(), Some("rt-fx-0"));
    assert_eq!(rig.history()[0].outcome, "retryable");
    // Still renewable: the status does not ask for a human.
    assert_eq!(rig.state(), ConnectorState::Ready);
}

/// The answer is lost after the server ran the grant, and it keeps no reuse grace period: the
/// pair it minted was only in that answer. Patchbay presents the token once more at once, the
/// server refuses it (and, by its reuse rule, revokes the family), and the history says why
/// instead of a bare `invalid_grant`. Nothing Patchbay could have done keeps this credential.
#[tokio::test]
async fn a_lost_answer_after_the_server_rotated_is_said_as_the_cause() {
    for fault in [
        Fault::ConsumeThenHang,
        Fault::ConsumeThenReset,
        Fault::ConsumeThenGarbage,
    ] {
        let rig = rig().await;
        rig.ras.push_fault(fault.clone());
        let outcome = rig.pass_outcome().await;
        assert_eq!(
            failed_class(&outcome),
            Some(RefreshClass::Permanent),
            "{fault:?}: {outcome:?}"
        );
        // Presented once more, at once, after one retry delay.
        let presented = rig.ras.presented();
        assert_eq!(presented, vec!["rt-fx-0", "rt-fx-0"], "{fault:?}");
        assert_eq!(rig.slept.lock().unwrap().len(), 1, "{fault:?}");
        let history = rig.history();
        assert_eq!(history[0].outcome, "permanent", "{fault:?}");
        // The lost answer is in the history, before the refusal of the token presented again.
        assert_eq!(history[1].outcome, "ambiguous", "{fault:?}");
        assert!(
            history[1]
                .summary
                .contains("presenting the refresh token once more"),
            "{fault:?}: {}",
            history[1].summary
        );
        let summary = history[0].summary.as_str();
        assert!(
            summary.contains("answer was lost after the server had already rotated"),
            "{fault:?}: {summary}"
        );
        // No refresh token is kept, and later passes present nothing.
        assert_eq!(rig.refresh_token(), None, "{fault:?}");
        rig.advance(chrono::Duration::minutes(90));
        let outcome = rig.pass_outcome().await;
        assert!(
            !matches!(outcome, RefreshOutcome::Refreshed { .. }),
            "{fault:?}: {outcome:?}"
        );
        assert_eq!(rig.ras.presented().len(), 2, "{fault:?}");
        assert_eq!(rig.state(), ConnectorState::NeedsReauth, "{fault:?}");
    }
}

/// The same lost answers at a server with a reuse grace period (Okta's and Auth0's rotation):
/// the token presented once more gets the pair minted from it, and nothing needs a human.
#[tokio::test]
async fn a_lost_answer_at_a_server_with_a_reuse_grace_period_costs_nothing() {
    for fault in [
        Fault::ConsumeThenHang,
        Fault::ConsumeThenReset,
        Fault::ConsumeThenGarbage,
    ] {
        let rig = rig().await;
        rig.ras.set_reuse_grace(true);
        rig.ras.push_fault(fault.clone());
        let outcome = rig.pass_outcome().await;
        assert!(
            matches!(outcome, RefreshOutcome::Refreshed { retries: 1, .. }),
            "{fault:?}: {outcome:?}"
        );
        assert_eq!(rig.ras.reuse_detected(), 0, "{fault:?}");
        assert_eq!(rig.refresh_token().as_deref(), Some("rt-fx-1"), "{fault:?}");
        let history = rig.history();
        assert_eq!(
            (history[0].outcome.as_str(), history[1].outcome.as_str()),
            ("refreshed", "ambiguous"),
            "{fault:?}: the lost answer shows, then the renewal"
        );
        if matches!(fault, Fault::ConsumeThenGarbage) {
            assert_eq!(
                history[1].http_status,
                Some(200),
                "a 200 whose body was lost"
            );
        }
        assert!(rig
            .patchbay
            .vault()
            .refresh_answers_lost()
            .unwrap()
            .is_empty());
        assert_eq!(rig.state(), ConnectorState::Ready, "{fault:?}");
        // And it keeps renewing from the recovered pair.
        rig.advance(chrono::Duration::minutes(31));
        let outcome = rig.pass_outcome().await;
        assert!(
            matches!(outcome, RefreshOutcome::Refreshed { .. }),
            "{fault:?}: {outcome:?}"
        );
        assert_eq!(rig.refresh_token().as_deref(), Some("rt-fx-2"), "{fault:?}");
    }
}

/// Patchbay stopped while a refresh's answer was in flight (the server had rotated; the vault
/// never got the new pair). The next pass presents the token once more at once, though the
/// credential is not due, while a reuse grace period still covers it: renewed. Without one,
/// the refusal says the answer was lost. Before the in-flight mark, the spent token waited
/// until next due, past any grace period, and a runtime could present it first.
#[tokio::test]
async fn a_refresh_cut_off_by_the_process_stopping_is_presented_once_more_at_the_next_pass() {
    for grace in [true, false] {
        let rig = rig().await;
        rig.ras.set_reuse_grace(grace);
        assert!(matches!(
            rig.pass_outcome().await,
            RefreshOutcome::Refreshed { .. }
        ));
        assert_eq!(rig.refresh_token().as_deref(), Some("rt-fx-1"));
        assert!(matches!(rig.pass_outcome().await, RefreshOutcome::NotDue));

        // An explicit refresh, by a process that stops while the server's answer is in flight:
        // its own runtime, shut down there, drops every task where it stands (its timeout is
        // long: the stop, not the timeout, ends it).
        rig.ras.push_fault(Fault::ConsumeThenHang);
        let process = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let stopping = Refresher::new(
            rig.patchbay.clone(),
            None,
            RefreshPolicy {
                http_timeout: Duration::from_secs(120),
                ..policy(rig.slept.clone(), None)
            },
        );
        process.spawn(async move { stopping.refresh("fx").await });
        let waited = std::time::Instant::now();
        while rig.ras.presented().len() < 2 {
            assert!(
                waited.elapsed() < Duration::from_secs(20),
                "the refresh never reached the server"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        process.shutdown_background();
        assert_eq!(
            rig.refresh_token().as_deref(),
            Some("rt-fx-1"),
            "nothing was kept"
        );

        // The next pass: not due, presented once more all the same.
        let outcome = rig.pass_outcome().await;
        assert_eq!(
            rig.ras.presented(),
            vec!["rt-fx-0", "rt-fx-1", "rt-fx-1"],
            "grace {grace}: {outcome:?}"
        );
        if grace {
            assert!(
                matches!(outcome, RefreshOutcome::Refreshed { retries: 0, .. }),
                "{outcome:?}"
            );
            assert_eq!(rig.refresh_token().as_deref(), Some("rt-fx-2"));
            assert_eq!(rig.ras.reuse_detected(), 0);
            assert_eq!(rig.state(), ConnectorState::Ready);
        } else {
            assert_eq!(
                failed_class(&outcome),
                Some(RefreshClass::Permanent),
                "{outcome:?}"
            );
            let summary = rig.history()[0].summary.clone();
            assert!(
                summary.contains("answer was lost after the server had already rotated"),
                "{summary}"
            );
        }
        // The history says why the token went out again.
        let cut_off = &rig.history()[1];
        assert_eq!(cut_off.outcome, "ambiguous");
        assert!(
            cut_off
                .summary
                .contains("cut off with its answer in flight"),
            "{}",
            cut_off.summary
        );
        // Settled either way: the pass after presents nothing.
        assert!(rig
            .patchbay
            .vault()
            .refreshes_in_flight()
            .unwrap()
            .is_empty());
        let _ = rig.pass_outcome().await;
        assert_eq!(rig.ras.presented().len(), 3, "grace {grace}");
    }
}

/// A token endpoint that hangs before running the grant, once and then twice in a row. Once:
/// the token presented again renews at once. Twice: it is kept and marked, the status does
/// not ask for a human, and the next pass renews it (the quarantine this replaced cost a
/// re-authorization here, though the server never spent the token).
#[tokio::test]
async fn a_hang_before_the_server_ran_the_grant_never_costs_a_reauthorization() {
    let rig = rig().await;
    rig.ras.push_fault(Fault::HangUnprocessed);
    let outcome = rig.pass_outcome().await;
    assert!(
        matches!(outcome, RefreshOutcome::Refreshed { retries: 1, .. }),
        "{outcome:?}"
    );
    assert_eq!(rig.refresh_token().as_deref(), Some("rt-fx-1"));

    rig.advance(chrono::Duration::minutes(31));
    rig.ras.push_fault(Fault::HangUnprocessed);
    rig.ras.push_fault(Fault::HangUnprocessed);
    let outcome = rig.pass_outcome().await;
    assert_eq!(
        failed_class(&outcome),
        Some(RefreshClass::Ambiguous),
        "{outcome:?}"
    );
    assert_eq!(rig.history()[0].outcome, "ambiguous");
    assert_eq!(rig.refresh_token().as_deref(), Some("rt-fx-1"));
    assert_eq!(
        rig.patchbay.vault().refresh_answers_lost().unwrap().len(),
        1,
        "the lost answer is remembered"
    );
    assert_eq!(rig.state(), ConnectorState::Ready);
    // Past the expiry: still renewable, and the next pass renews it.
    rig.advance(chrono::Duration::minutes(40));
    let outcome = rig.pass_outcome().await;
    assert!(
        matches!(outcome, RefreshOutcome::Refreshed { .. }),
        "{outcome:?}"
    );
    assert_eq!(rig.refresh_token().as_deref(), Some("rt-fx-2"));
    assert!(rig
        .patchbay
        .vault()
        .refresh_answers_lost()
        .unwrap()
        .is_empty());
    assert_eq!(rig.ras.reuse_detected(), 0);
    assert_eq!(rig.state(), ConnectorState::Ready);
}

/// A 429 that says `Retry-After: 600` is waited for: passes in the next 10 minutes send
/// nothing to that server (the schedule's timer is told too), the first one after renews.
#[tokio::test]
async fn a_retry_after_is_honoured_by_the_passes() {
    let rig = rig().await;
    rig.ras.push_fault(Fault::RateLimited(600));
    let outcome = rig.pass_outcome().await;
    assert_eq!(
        failed_class(&outcome),
        Some(RefreshClass::Transient),
        "{outcome:?}"
    );
    let rows = rig.patchbay.vault().credential_rows().unwrap();
    let waiting = rig.refresher.waiting_until(&rows);
    assert_eq!(waiting.len(), 1);
    assert_eq!(
        waiting[0].1,
        DateTime::from_timestamp_millis(T0).unwrap() + chrono::Duration::seconds(600)
    );
    for _ in 0..4 {
        rig.advance(chrono::Duration::minutes(2));
        let outcome = rig.pass_outcome().await;
        assert!(
            !matches!(outcome, RefreshOutcome::Refreshed { .. }),
            "{outcome:?}"
        );
    }
    assert_eq!(
        rig.ras.presented().len(),
        1,
        "nothing sent while asked to wait"
    );
    rig.advance(chrono::Duration::minutes(3));
    let outcome = rig.pass_outcome().await;
    assert!(
        matches!(outcome, RefreshOutcome::Refreshed { .. }),
        "{outcome:?}"
    );
    assert!(rig.refresher.waiting_until(&rows).is_empty());
    assert_eq!(rig.refresh_token().as_deref(), Some("rt-fx-1"));
}

#[tokio::test]
async fn rate_limits_and_outages_keep_the_refresh_token_for_the_next_pass() {
    let faults = [
        Fault::Status(
            503,
            "text/html",
            "<html><h1>503 Service Unavailable</h1></html>".into(),
        ),
        Fault::Status(429, "application/json", r#"{"error":"slow_down"}"#.into()),
        Fault::Status(
            500,
            "application/json",
            r#"{"error":"server_error"}"#.into(),
        ),
        Fault::Status(502, "text/html", "<html>Bad Gateway</html>".into()),
    ];
    for fault in faults {
        let rig = rig().await;
        rig.ras.push_fault(fault.clone());
        let outcome = rig.pass_outcome().await;
        assert_eq!(
            failed_class(&outcome),
            Some(RefreshClass::Transient),
            "{fault:?}: {outcome:?}"
        );
        assert_eq!(rig.refresh_token().as_deref(), Some("rt-fx-0"), "{fault:?}");
        let attempt = &rig.history()[0];
        assert_eq!(attempt.outcome, "transient");
        assert!(attempt.http_status.is_some_and(|s| s == 429 || s >= 500));
        // The next pass presents the same token, which the server never spent: it works.
        rig.advance(chrono::Duration::minutes(30));
        assert!(
            matches!(rig.pass_outcome().await, RefreshOutcome::Refreshed { .. }),
            "{fault:?}"
        );
        assert_eq!(rig.ras.reuse_detected(), 0);
    }
}

#[tokio::test]
async fn any_other_4xx_drops_the_refresh_token_and_keeps_a_valid_access_token() {
    let faults = [
        Fault::Status(
            400,
            "text/html",
            "<html><body>400 Bad Request</body></html>".into(),
        ),
        Fault::Status(
            400,
            "application/json",
            r#"{"error":"invalid_grant"}"#.into(),
        ),
        Fault::Status(
            401,
            "application/json",
            r#"{"error":"invalid_client"}"#.into(),
        ),
        Fault::Status(403, "text/plain", "forbidden".into()),
    ];
    for fault in faults {
        let rig = rig().await;
        rig.ras.push_fault(fault.clone());
        let outcome = rig.pass_outcome().await;
        assert_eq!(
            failed_class(&outcome),
            Some(RefreshClass::Permanent),
            "{fault:?}: {outcome:?}"
        );
        assert_eq!(rig.refresh_token(), None, "{fault:?}");
        assert_eq!(rig.tokens().access_token.expose(), "at-fx-0");
        // Valid for 30 more minutes: still Ready; once it lapses, Needs re-auth.
        assert_eq!(rig.state(), ConnectorState::Ready);
        rig.advance(chrono::Duration::minutes(31));
        assert_eq!(rig.state(), ConnectorState::NeedsReauth);
        assert!(matches!(
            rig.pass_outcome().await,
            RefreshOutcome::NotDue | RefreshOutcome::Skipped { .. }
        ));
        assert_eq!(rig.ras.presented().len(), 1);
    }
}

#[tokio::test]
async fn the_history_detail_is_scrubbed_and_capped() {
    let rig = rig().await;
    let echo = format!(
        r#"{{"error":"invalid_grant","error_description":"refresh token rt-fx-0 is not valid","padding":"{}"}}"#,
        "x".repeat(10_000)
    );
    rig.ras
        .push_fault(Fault::Status(400, "application/json", echo));
    rig.pass_outcome().await;
    let attempt = &rig.history()[0];
    let detail = attempt.detail.as_ref().unwrap();
    assert!(!detail.contains("rt-fx-0"), "{detail}");
    assert!(detail.contains("invalid_grant"));
    assert!(detail.len() <= patchbay_vault::DETAIL_MAX);
    assert_eq!(attempt.http_status, Some(400));
}

#[tokio::test]
async fn two_processes_refreshing_at_once_spend_the_token_once() {
    let rig = rig().await;
    // A second "process": its own database connection and refresher over the same data
    // directory and keychain; only the lock file serializes the two.
    let second = open(rig.dir.path(), rig.store.clone(), rig.clock.clone());
    let other = Refresher::new(second, None, policy(Arc::new(Mutex::new(Vec::new())), None));
    let (a, b) = tokio::join!(rig.refresher.pass(), other.pass());
    let outcomes: Vec<RefreshOutcome> = [a.unwrap(), b.unwrap()]
        .into_iter()
        .flat_map(|r| r.results.into_iter().map(|r| r.outcome))
        .collect();
    let refreshed = outcomes
        .iter()
        .filter(|o| matches!(o, RefreshOutcome::Refreshed { .. }))
        .count();
    assert_eq!(refreshed, 1, "{outcomes:?}");
    assert_eq!(rig.ras.presented(), vec!["rt-fx-0".to_string()]);
    assert_eq!(rig.ras.reuse_detected(), 0);
}

#[tokio::test]
async fn a_runtime_reporting_its_refresh_rejected_retires_the_credential() {
    let rig = rig().await;
    // A brokered provider's error is not ours: nothing changes.
    assert_eq!(
        rig.refresher
            .runtime_reported(
                "fx",
                Runtime::ClaudeCode,
                "tool call failed: upstream said invalid_grant"
            )
            .unwrap(),
        RuntimeReportOutcome::NotRecognized
    );
    assert_eq!(rig.refresh_token().as_deref(), Some("rt-fx-0"));
    assert_eq!(
        rig.refresher
            .runtime_reported(
                "fx",
                Runtime::ClaudeCode,
                "Token refresh failed with invalid_grant: Invalid refresh token"
            )
            .unwrap(),
        RuntimeReportOutcome::Retired
    );
    let row = rig.row();
    assert!(!row.is_live(rig.patchbay.now()));
    assert_eq!(rig.refresh_token(), None);
    assert_eq!(rig.state(), ConnectorState::NeedsReauth);
    assert_eq!(rig.history()[0].outcome, "retired");
    // Nothing left to present.
    rig.pass_outcome().await;
    assert!(rig.ras.presented().is_empty());
}

#[tokio::test]
async fn disconnect_revokes_at_the_server_and_forgets_everything_asked() {
    let rig = rig().await;
    rig.patchbay
        .vault()
        .put_registration(&Registration {
            issuer: rig.ras.base.clone(),
            redirect_uri: "http://localhost:3118/callback".into(),
            client_id: "cid".into(),
            client_secret: None,
            token_auth_method: None,
            created_at: rig.patchbay.now(),
        })
        .unwrap();
    let done = rig.refresher.disconnect("fx", true).await.unwrap();
    assert_eq!(done.revoked, Some(true), "{:?}", done.revocation_error);
    assert!(done.registration_forgotten);
    assert_eq!(
        rig.ras.revoked(),
        vec![
            ("rt-fx-0".to_string(), "refresh_token".to_string()),
            ("at-fx-0".to_string(), "access_token".to_string()),
        ]
    );
    assert!(rig.patchbay.vault().credential_rows().unwrap().is_empty());
    assert!(rig.patchbay.vault().grant(&rig.key).unwrap().is_none());
    assert!(rig
        .patchbay
        .vault()
        .registration(&rig.ras.base, "http://localhost:3118/callback")
        .unwrap()
        .is_none());
    assert_eq!(rig.state(), ConnectorState::NeedsAuthorization);
    let _ = &rig.dir;
}

#[tokio::test]
async fn disconnect_without_a_revocation_endpoint_still_removes_the_credential() {
    let rig = rig().await;
    rig.ras.set_revocation(false);
    let done = rig.refresher.disconnect("fx", false).await.unwrap();
    assert_eq!(done.revoked, None);
    assert!(!done.registration_forgotten);
    assert!(rig.ras.revoked().is_empty());
    assert!(rig.patchbay.vault().credential_rows().unwrap().is_empty());
}

// ---- with the runtime bridges: reconcile before refreshing, write through after ----

struct Bridged {
    rig: Rig,
    refresher: Refresher,
    claude: ClaudeFileStore,
    runtime_key: CredentialKey,
}

/// The rig with Claude Code configured with the connector (as "fx-claude", its own name).
async fn bridged_rig() -> Bridged {
    let rig = rig().await;
    let home = rig.dir.path().join("home");
    let runtime_paths = RuntimePaths::resolve(&home, &|_| None);
    std::fs::create_dir_all(&runtime_paths.claude_config_dir).unwrap();
    std::fs::write(
        &runtime_paths.claude_json,
        json!({"mcpServers": {"fx-claude": {"type": "http", "url": MCP_URL}}}).to_string(),
    )
    .unwrap();
    let bridges = Arc::new(Bridges::with_paths(
        rig.patchbay.clone(),
        Some(runtime_paths.clone()),
    ));
    let runtime_key = bridges
        .bridged()
        .into_iter()
        .find(|b| b.connector == "fx")
        .and_then(|b| b.credential_key)
        .expect("fx is bridged to Claude Code");
    let refresher = Refresher::new(
        rig.patchbay.clone(),
        Some(bridges),
        policy(Arc::new(Mutex::new(Vec::new())), None),
    );
    Bridged {
        claude: ClaudeFileStore::new(&runtime_paths),
        rig,
        refresher,
        runtime_key,
    }
}

impl Bridged {
    /// Claude Code refreshed by itself: its store holds the family's next pair.
    fn runtime_rotates(&self, expires_at: DateTime<chrono::Utc>) -> (String, String) {
        let (access, refresh) = self.rig.ras.rotate_elsewhere("fx");
        self.claude
            .write(
                &RuntimeCredential {
                    key: self.runtime_key.clone(),
                    server_name: "fx-claude".into(),
                    server_url: MCP_URL.into(),
                    access_token: Secret::new(access.clone()),
                    refresh_token: Some(Secret::new(refresh.clone())),
                    expires_at: Some(expires_at),
                    scope: None,
                    client_id: Some("cid".into()),
                    client_secret: None,
                    issuer: None,
                },
                // Written "before" our clock so a still-valid check never keeps ours.
                expires_at - chrono::Duration::hours(2),
            )
            .unwrap();
        (access, refresh)
    }

    fn runtime_refresh_token(&self) -> Option<String> {
        self.claude
            .read(&self.runtime_key)
            .unwrap()
            .and_then(|c| c.refresh_token)
            .map(|t| t.expose().to_string())
    }

    async fn pass_outcome(&self) -> RefreshOutcome {
        let report = self.refresher.pass().await.unwrap();
        report
            .results
            .into_iter()
            .next()
            .map(|r| r.outcome)
            .unwrap_or(RefreshOutcome::NotDue)
    }
}

#[tokio::test]
async fn a_pair_the_runtime_rotated_is_adopted_instead_of_refreshed() {
    let b = bridged_rig().await;
    let now = b.rig.patchbay.now();
    b.runtime_rotates(now + chrono::Duration::minutes(55));
    let outcome = b.pass_outcome().await;
    assert_eq!(
        outcome,
        RefreshOutcome::Adopted {
            runtime: Runtime::ClaudeCode
        }
    );
    // Nothing was sent: the runtime's rotation is the live head of the chain.
    assert!(b.rig.ras.presented().is_empty());
    assert_eq!(b.rig.refresh_token().as_deref(), Some("rt-fx-1"));
    assert_eq!(b.rig.history()[0].outcome, "adopted");
}

#[tokio::test]
async fn an_adopted_pair_that_already_expired_is_refreshed_from_its_own_refresh_token() {
    let b = bridged_rig().await;
    let now = b.rig.patchbay.now();
    // Claude Code refreshed a while ago; its access token lapsed since, yet it is later than
    // ours, so its refresh token is the live one.
    b.runtime_rotates(now + chrono::Duration::minutes(40));
    b.rig.advance(chrono::Duration::minutes(45));
    let outcome = b.pass_outcome().await;
    assert!(
        matches!(outcome, RefreshOutcome::Refreshed { .. }),
        "{outcome:?}"
    );
    // rt-fx-0 (ours, rotated away) was never presented: that would have been reuse.
    assert_eq!(b.rig.ras.presented(), vec!["rt-fx-1".to_string()]);
    assert_eq!(b.rig.ras.reuse_detected(), 0);
    // And the refreshed pair was written through to Claude Code.
    assert_eq!(b.runtime_refresh_token().as_deref(), Some("rt-fx-2"));
}

#[tokio::test]
async fn a_refresh_is_written_through_and_a_retirement_leaves_nothing_to_adopt() {
    let b = bridged_rig().await;
    assert!(matches!(
        b.pass_outcome().await,
        RefreshOutcome::Refreshed { .. }
    ));
    assert_eq!(b.runtime_refresh_token().as_deref(), Some("rt-fx-1"));
    b.refresher
        .runtime_reported(
            "fx",
            Runtime::ClaudeCode,
            "Token refresh failed with invalid_grant: Invalid refresh token",
        )
        .unwrap();
    // Gone from Claude Code's store too, so its later expiry can never be adopted back.
    assert!(b.claude.read(&b.runtime_key).unwrap().is_none());
    assert_eq!(b.rig.state(), ConnectorState::NeedsReauth);
}

#[tokio::test]
async fn disconnect_removes_the_runtime_entry_too() {
    let b = bridged_rig().await;
    b.pass_outcome().await;
    assert!(b.claude.read(&b.runtime_key).unwrap().is_some());
    let done = b.refresher.disconnect("fx", false).await.unwrap();
    assert_eq!(done.removed_from, vec![Runtime::ClaudeCode]);
    assert!(b.claude.read(&b.runtime_key).unwrap().is_none());
}

#[tokio::test]
async fn a_confidential_clients_secret_is_bridged_so_the_runtime_can_refresh_by_itself() {
    let b = bridged_rig().await;
    let mut grant = b.rig.patchbay.vault().grant(&b.rig.key).unwrap().unwrap();
    grant.client_secret = Some(Secret::new("client-secret-value"));
    grant.token_auth_method = "client_secret_post".into();
    b.rig.patchbay.vault().put_grant(&grant).unwrap();
    assert!(matches!(
        b.pass_outcome().await,
        RefreshOutcome::Refreshed { .. }
    ));
    let written = b.claude.read(&b.runtime_key).unwrap().unwrap();
    assert_eq!(
        written
            .client_secret
            .map(|s| s.expose().to_string())
            .as_deref(),
        Some("client-secret-value")
    );
    assert_eq!(b.rig.ras.forms()[0]["client_secret"], "client-secret-value");
}

// ---- Errors we caused never cost a refresh token (issue 10) ----

#[tokio::test]
async fn a_scope_that_was_asked_for_but_never_granted_is_not_sent_on_refresh() {
    // oidc-provider: the grant asked for offline_access, the server granted mcp:read only, and
    // a refresh naming offline_access is `invalid_scope`.
    let rig = rig().await;
    let mut grant = rig.patchbay.vault().grant(&rig.key).unwrap().unwrap();
    grant.scopes = Some("mcp:read offline_access".into());
    rig.patchbay.vault().put_grant(&grant).unwrap();
    rig.ras.grant_scope("mcp:read");
    for round in 0..2 {
        let outcome = rig.pass_outcome().await;
        assert!(
            matches!(outcome, RefreshOutcome::Refreshed { .. }),
            "round {round}: {outcome:?}"
        );
        rig.advance(chrono::Duration::minutes(61));
    }
    assert!(rig.ras.forms().iter().all(|f| !f.contains_key("scope")));
    assert_eq!(rig.refresh_token().as_deref(), Some("rt-fx-2"));
}

#[tokio::test]
async fn a_server_that_wants_the_scope_named_gets_exactly_the_granted_one_once() {
    let rig = rig().await;
    rig.ras.require_scope();
    rig.ras.grant_scope("mcp:read");
    let outcome = rig.pass_outcome().await;
    assert!(
        matches!(outcome, RefreshOutcome::Refreshed { .. }),
        "{outcome:?}"
    );
    let forms = rig.ras.forms();
    assert_eq!(forms.len(), 2, "one refusal, one corrected retry");
    assert_eq!(forms[0].get("scope"), None);
    assert_eq!(forms[1]["scope"], "mcp:read");
    let history = rig.history();
    assert!(
        history[0].summary.contains("granted scope"),
        "{}",
        history[0].summary
    );
}

#[tokio::test]
async fn a_refusal_of_our_request_keeps_the_refresh_token_and_says_so() {
    for error in [
        "invalid_scope",
        "invalid_request",
        "unsupported_grant_type",
        "invalid_target",
    ] {
        let rig = rig().await;
        let body = format!(r#"{{"error":"{error}"}}"#);
        // A scope error is corrected once (the granted scope is sent), a refused resource
        // indicator too (sent without it); a grant type the server does not do has nothing to
        // correct.
        let attempts = if error == "unsupported_grant_type" {
            1
        } else {
            2
        };
        for _ in 0..attempts {
            rig.ras
                .push_fault(Fault::Status(400, "application/json", body.clone()));
        }
        let outcome = rig.pass_outcome().await;
        assert_eq!(rig.ras.forms().len(), attempts, "{error}");
        assert_eq!(
            failed_class(&outcome),
            Some(RefreshClass::Rejected),
            "{error}: {outcome:?}"
        );
        // Kept: the token was never the problem.
        assert_eq!(rig.refresh_token().as_deref(), Some("rt-fx-0"), "{error}");
        assert_eq!(rig.history()[0].outcome, "rejected");
        assert!(rig.history()[0].summary.contains(error), "{error}");
        // And it still renews on the next pass once the server takes the request.
        rig.advance(chrono::Duration::minutes(31));
        assert!(
            matches!(rig.pass_outcome().await, RefreshOutcome::Refreshed { .. }),
            "{error}"
        );
        assert_eq!(rig.ras.reuse_detected(), 0);
    }
}

#[tokio::test]
async fn a_confidential_client_falls_back_to_the_other_authentication_and_remembers_it() {
    // FastMCP-like: the registration said client_secret_basic, the token endpoint takes only
    // client_secret_post.
    let rig = rig().await;
    let mut grant = rig.patchbay.vault().grant(&rig.key).unwrap().unwrap();
    grant.client_secret = Some(Secret::new("s3cret-value"));
    grant.token_auth_method = "client_secret_basic".into();
    rig.patchbay.vault().put_grant(&grant).unwrap();
    rig.ras
        .confidential("cid", "s3cret-value", "client_secret_post");
    let outcome = rig.pass_outcome().await;
    assert!(
        matches!(outcome, RefreshOutcome::Refreshed { .. }),
        "{outcome:?}"
    );
    assert_eq!(rig.ras.forms().len(), 2);
    let remembered = rig.patchbay.vault().grant(&rig.key).unwrap().unwrap();
    assert_eq!(remembered.token_auth_method, "client_secret_post");
    // The next refresh goes straight to the method that worked.
    rig.advance(chrono::Duration::minutes(61));
    assert!(matches!(
        rig.pass_outcome().await,
        RefreshOutcome::Refreshed { .. }
    ));
    assert_eq!(rig.ras.forms().len(), 3);
}

#[tokio::test]
async fn a_bare_401_to_a_confidential_client_is_its_authentication_not_the_token() {
    // A server that answers the authentication it does not take with a plain 401, no error
    // code: the other method is tried once, and the refresh token is never dropped for it.
    let rig = rig().await;
    let mut grant = rig.patchbay.vault().grant(&rig.key).unwrap().unwrap();
    grant.client_secret = Some(Secret::new("s3cret-value"));
    grant.token_auth_method = "client_secret_basic".into();
    rig.patchbay.vault().put_grant(&grant).unwrap();
    rig.ras
        .push_fault(Fault::Status(401, "text/plain", "Unauthorized".into()));
    let outcome = rig.pass_outcome().await;
    assert!(
        matches!(outcome, RefreshOutcome::Refreshed { .. }),
        "{outcome:?}"
    );
    assert_eq!(rig.ras.forms().len(), 2);
    let remembered = rig.patchbay.vault().grant(&rig.key).unwrap().unwrap();
    assert_eq!(remembered.token_auth_method, "client_secret_post");

    // Refused both ways: said, and the refresh token kept.
    rig.advance(chrono::Duration::minutes(61));
    for _ in 0..2 {
        rig.ras
            .push_fault(Fault::Status(401, "text/plain", "Unauthorized".into()));
    }
    let outcome = rig.pass_outcome().await;
    assert_eq!(
        failed_class(&outcome),
        Some(RefreshClass::Rejected),
        "{outcome:?}"
    );
    assert!(rig.refresh_token().is_some());
}

/// A grant whose client authenticates in a way Patchbay cannot perform (`private_key_jwt`, as an
/// imported grant may say), or with a secret Patchbay does not hold: the request goes out as a
/// public client's, and the server's `invalid_client` refuses that authentication, not the
/// token. Kept and said, never dropped. A public client's refused id still drops it: the server
/// forgot the registration the token belongs to.
#[tokio::test]
async fn a_client_authentication_patchbay_cannot_carry_out_never_costs_the_token() {
    let invalid_client = || {
        Fault::Status(
            401,
            "application/json",
            r#"{"error":"invalid_client"}"#.into(),
        )
    };
    for method in ["private_key_jwt", "client_secret_basic"] {
        let rig = rig().await;
        let mut grant = rig.patchbay.vault().grant(&rig.key).unwrap().unwrap();
        grant.token_auth_method = method.into();
        grant.client_secret = None;
        rig.patchbay.vault().put_grant(&grant).unwrap();
        rig.ras.push_fault(invalid_client());
        let outcome = rig.pass_outcome().await;
        assert_eq!(rig.ras.forms().len(), 1, "{method}: no other method to try");
        assert_eq!(
            failed_class(&outcome),
            Some(RefreshClass::Rejected),
            "{method}: {outcome:?}"
        );
        assert_eq!(rig.refresh_token().as_deref(), Some("rt-fx-0"), "{method}");
        assert_eq!(rig.history()[0].outcome, "rejected", "{method}");
    }
    let rig = rig().await;
    rig.ras.push_fault(invalid_client());
    let outcome = rig.pass_outcome().await;
    assert_eq!(
        failed_class(&outcome),
        Some(RefreshClass::Permanent),
        "a public client: {outcome:?}"
    );
    assert_eq!(rig.refresh_token(), None);
}

#[tokio::test]
async fn a_pair_issued_to_another_client_is_renewed_as_that_client() {
    // A pair adopted (by an older Patchbay) from Claude Code's own client: renewing it with our
    // client would be `invalid_grant` and would cost the live refresh token.
    let rig = rig().await;
    rig.ras.issue_to("fx", "claude-code-client");
    let mut row = rig.row();
    row.client_id = Some("claude-code-client".into());
    rig.patchbay
        .vault()
        .put_credential(&row, &rig.tokens())
        .unwrap();
    let outcome = rig.pass_outcome().await;
    assert!(
        matches!(outcome, RefreshOutcome::Refreshed { .. }),
        "{outcome:?}"
    );
    assert_eq!(rig.ras.forms()[0]["client_id"], "claude-code-client");
    assert_eq!(rig.row().client_id.as_deref(), Some("claude-code-client"));
    assert_eq!(rig.refresh_token().as_deref(), Some("rt-fx-1"));

    // That client turns out to authenticate (a secret Patchbay does not have): its
    // `invalid_client` refuses our guess at the client, not the token. Kept and said.
    rig.advance(chrono::Duration::minutes(61));
    rig.ras.push_fault(Fault::Status(
        401,
        "application/json",
        r#"{"error":"invalid_client"}"#.into(),
    ));
    let outcome = rig.pass_outcome().await;
    assert_eq!(
        failed_class(&outcome),
        Some(RefreshClass::Rejected),
        "{outcome:?}"
    );
    assert_eq!(rig.refresh_token().as_deref(), Some("rt-fx-1"));
}

#[tokio::test]
async fn a_newer_pair_from_another_client_in_the_runtime_is_left_alone() {
    let b = bridged_rig().await;
    let now = b.rig.patchbay.now();
    // The user also logged in through Claude Code's own /mcp: another family, another client.
    let theirs = b.rig.ras.seed("claude");
    b.rig.ras.issue_to("claude", "claude-code-client");
    b.rig.ras.issue_to("fx", "cid");
    b.claude
        .write(
            &RuntimeCredential {
                key: b.runtime_key.clone(),
                server_name: "fx-claude".into(),
                server_url: MCP_URL.into(),
                access_token: Secret::new("at-claude-0"),
                refresh_token: Some(Secret::new(theirs.clone())),
                expires_at: Some(now + chrono::Duration::minutes(55)),
                scope: None,
                client_id: Some("claude-code-client".into()),
                client_secret: None,
                issuer: None,
            },
            now - chrono::Duration::hours(2),
        )
        .unwrap();
    let outcome = b.pass_outcome().await;
    assert!(
        matches!(outcome, RefreshOutcome::Refreshed { .. }),
        "{outcome:?}"
    );
    // Ours was renewed with our client; theirs was never presented nor adopted.
    assert_eq!(b.rig.ras.presented(), vec!["rt-fx-0".to_string()]);
    assert_eq!(b.rig.refresh_token().as_deref(), Some("rt-fx-1"));
    assert_eq!(b.rig.row().client_id.as_deref(), Some("cid"));
    assert!(b.rig.history().iter().all(|a| a.outcome != "adopted"));
    // Claude Code keeps its own fresher pair.
    assert_eq!(b.runtime_refresh_token().as_deref(), Some(theirs.as_str()));
}

#[tokio::test]
async fn an_explicit_refresh_renews_even_right_after_an_adoption() {
    let b = bridged_rig().await;
    let now = b.rig.patchbay.now();
    b.runtime_rotates(now + chrono::Duration::minutes(55));
    let outcome = b.refresher.refresh("fx").await.unwrap();
    assert!(
        matches!(outcome, RefreshOutcome::Refreshed { .. }),
        "{outcome:?}"
    );
    // The adopted head of the chain (rt-fx-1) was the one presented: no reuse.
    assert_eq!(b.rig.ras.presented(), vec!["rt-fx-1".to_string()]);
    assert_eq!(b.rig.refresh_token().as_deref(), Some("rt-fx-2"));
    assert_eq!(b.rig.ras.reuse_detected(), 0);
    let outcomes: Vec<String> = b.rig.history().into_iter().map(|a| a.outcome).collect();
    assert_eq!(outcomes, vec!["refreshed", "adopted"]);
}

#[tokio::test]
async fn claude_codes_refusal_of_its_own_clients_pair_never_retires_ours() {
    let b = bridged_rig().await;
    let now = b.rig.patchbay.now();
    // Claude Code's own login (its client) for the same server, then its refresh refused and
    // logged; it strips its entry but the entry still names its client.
    b.claude
        .write(
            &RuntimeCredential {
                key: b.runtime_key.clone(),
                server_name: "fx-claude".into(),
                server_url: MCP_URL.into(),
                access_token: Secret::new("at-claude-0"),
                refresh_token: None,
                expires_at: Some(now - chrono::Duration::minutes(1)),
                scope: None,
                client_id: Some("claude-code-client".into()),
                client_secret: None,
                issuer: None,
            },
            now - chrono::Duration::hours(2),
        )
        .unwrap();
    let logs = b
        .rig
        .dir
        .path()
        .join("home/.cache/claude-cli-nodejs/-tmp-p/mcp-logs-fx-claude");
    std::fs::create_dir_all(&logs).unwrap();
    let at =
        (now + chrono::Duration::seconds(5)).to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    std::fs::write(
        logs.join("run.jsonl"),
        format!(
            "{{\"error\":\"Token refresh failed with invalid_grant: Invalid refresh token\",\"timestamp\":\"{at}\",\"sessionId\":\"s\",\"cwd\":\"/tmp/p\"}}\n"
        ),
    )
    .unwrap();
    // Modified "now" on the rig's clock (a file older than the credential is history).
    let stamp =
        std::time::UNIX_EPOCH + Duration::from_millis((now.timestamp_millis() + 5_000) as u64);
    std::fs::File::options()
        .append(true)
        .open(logs.join("run.jsonl"))
        .unwrap()
        .set_modified(stamp)
        .unwrap();
    assert!(b.refresher.scan_runtime_logs().is_empty());
    assert_eq!(b.rig.refresh_token().as_deref(), Some("rt-fx-0"));

    // The same line about a pair of our client retires ours.
    let mut ours = b.claude.read(&b.runtime_key).unwrap().unwrap();
    ours.client_id = Some("cid".into());
    ours.expires_at = Some(now + chrono::Duration::hours(3));
    b.claude.write(&ours, now).unwrap();
    // A new scanner: the first one has read that line already.
    let fresh = Refresher::new(
        b.rig.patchbay.clone(),
        Some(Arc::new(Bridges::with_paths(
            b.rig.patchbay.clone(),
            Some(RuntimePaths::resolve(
                &b.rig.dir.path().join("home"),
                &|_| None,
            )),
        ))),
        policy(Arc::new(Mutex::new(Vec::new())), None),
    );
    assert_eq!(fresh.scan_runtime_logs(), vec!["fx".to_string()]);
}

#[tokio::test]
async fn a_codex_bridged_credential_is_renewed_under_codexs_own_refresh_lock() {
    let rig = rig().await;
    let home = rig.dir.path().join("home");
    let runtime_paths = RuntimePaths::resolve(&home, &|_| None);
    std::fs::create_dir_all(&runtime_paths.codex_home).unwrap();
    std::fs::write(
        runtime_paths.codex_home.join("config.toml"),
        format!(
            "mcp_oauth_credentials_store = \"file\"\n[mcp_servers.fx-codex]\nurl = \"{MCP_URL}\"\n"
        ),
    )
    .unwrap();
    let bridges = Arc::new(Bridges::with_paths(
        rig.patchbay.clone(),
        Some(runtime_paths.clone()),
    ));
    let codex_key = bridges
        .bridged()
        .into_iter()
        .find(|b| b.connector == "fx" && b.runtime == Runtime::Codex)
        .and_then(|b| b.credential_key)
        .expect("fx is bridged to Codex");
    let mut short = policy(Arc::new(Mutex::new(Vec::new())), None);
    short.lock_timeout = Duration::from_millis(300);
    let refresher = Refresher::new(rig.patchbay.clone(), Some(bridges), short);

    // Codex holds its lock (it is refreshing): nothing is presented.
    let held = patchbay_runtimes::codex::lock_codex_refresh(
        &runtime_paths.codex_home,
        &codex_key,
        Duration::from_secs(1),
    )
    .unwrap();
    let outcome = refresher.refresh("fx").await.unwrap();
    assert!(
        matches!(&outcome, RefreshOutcome::Skipped { reason } if reason.contains("Codex")),
        "{outcome:?}"
    );
    assert!(rig.ras.presented().is_empty());
    drop(held);
    let outcome = refresher.refresh("fx").await.unwrap();
    assert!(
        matches!(outcome, RefreshOutcome::Refreshed { .. }),
        "{outcome:?}"
    );
}
