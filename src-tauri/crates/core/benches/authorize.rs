//! The time from Authorize to a stored token, consent excluded, against the in-repo
//! auto-approving authorization server (tests/support/fake_as.rs) on 127.0.0.1.
//!
//! One iteration: `Authorizer::start` (the 401 challenge, protected-resource and authorization-
//! server metadata, PKCE, the pending flow sealed in the vault) → the consent URL followed as a
//! browser would (the fake approves at once with a 302) → the redirect delivered, then the token
//! exchange and the credential sealed in the vault:
//! - `receiver`: to the loopback receiver over HTTP, as the browser does; done when `wait_for`
//!   returns. Each run starts with the receiver stopped (binding it is part of the figure), as
//!   when someone clicks Authorize; waiting for it to stop after the previous run is not timed;
//! - `paste_back`: through `complete_pasted`, as the window's field and the CLI's stdin do.
//!
//! An untimed first authorization registers the client (DCR) and reads the vault's key, as
//! Patchbay reuses a registration per issuer and redirect and an open instance keeps the key, so
//! the figures are those of every authorization after the first. With PATCHBAY_TEST_KEYCHAIN=1
//! the vault's key is in the real OS keychain; otherwise in memory.

#[path = "../tests/support/fake_as.rs"]
mod fake_as;

use criterion::{criterion_group, criterion_main, Criterion, SamplingMode};
use fake_as::{Config, FakeAs};
use patchbay_core::{Authorizer, AuthorizerOptions, Completion, Patchbay, Paths, StartOptions};
use patchbay_vault::{KeyringStore, MemoryStore, SecretStore};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn real_keychain() -> bool {
    std::env::var("PATCHBAY_TEST_KEYCHAIN").as_deref() == Ok("1")
}

struct Rig {
    _dir: tempfile::TempDir,
    auth: Authorizer,
    browser: reqwest::Client,
}

/// A port nobody listens on now (the OS's pick, released at once).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port()
}

fn rig(fake: &FakeAs, use_receiver: bool) -> Rig {
    let dir = tempfile::tempdir().unwrap();
    let catalog = dir.path().join("catalog.json");
    let entry =
        serde_json::json!({ "mcpServers": { "fx": { "type": "http", "url": fake.mcp_url() } } });
    std::fs::write(&catalog, entry.to_string()).unwrap();
    let paths = Paths::resolve(Some(dir.path().to_path_buf()))
        .unwrap()
        .with_catalog_override(Some(catalog))
        .unwrap();
    let store: Arc<dyn SecretStore> = if real_keychain() {
        Arc::new(KeyringStore::new("Patchbay bench"))
    } else {
        Arc::new(MemoryStore::default())
    };
    let patchbay = Patchbay::with_store(paths, store).unwrap();
    let auth = Authorizer::new(
        Arc::new(patchbay),
        AuthorizerOptions {
            port: free_port(),
            use_receiver,
            ..AuthorizerOptions::default()
        },
    );
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    Rig {
        _dir: dir,
        auth,
        browser,
    }
}

impl Rig {
    /// The consent page, auto-approved: the redirect's Location.
    async fn consent(&self, url: &str) -> String {
        let answer = self.browser.get(url).send().await.unwrap();
        assert_eq!(answer.status(), 302, "the fake approves with a redirect");
        answer.headers()["location"].to_str().unwrap().to_string()
    }

    async fn by_receiver(&self) {
        let started = self
            .auth
            .start("fx", StartOptions::default())
            .await
            .unwrap();
        assert!(matches!(started.completion, Completion::Receiver { .. }));
        let location = self.consent(&started.authorize_url).await;
        let page = self.browser.get(&location).send().await.unwrap();
        assert_eq!(page.status(), 200, "the receiver's page");
        self.auth
            .wait_for("fx", Duration::from_secs(10))
            .await
            .unwrap();
    }

    async fn by_paste_back(&self) {
        let started = self
            .auth
            .start("fx", StartOptions::default())
            .await
            .unwrap();
        assert!(matches!(started.completion, Completion::PasteBack { .. }));
        let location = self.consent(&started.authorize_url).await;
        self.auth.complete_pasted("fx", &location).await.unwrap();
    }

    /// Waits until the receiver has stopped (it does so once idle after a callback).
    async fn receiver_stopped(&self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.auth.receiver_running().await {
            assert!(Instant::now() < deadline, "the receiver never stopped");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// The credential is in the vault, with its tokens.
    fn assert_stored(&self) {
        let vault = self.auth.patchbay().vault();
        let rows = vault.credential_rows().unwrap();
        assert_eq!(rows.len(), 1);
        assert!(vault
            .credential_tokens(&rows[0].credential_key)
            .unwrap()
            .is_some());
    }
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let fake = runtime.block_on(FakeAs::start(Config::default()));
    eprintln!(
        "authorize bench: keychain = {}",
        if real_keychain() {
            "the real OS keychain"
        } else {
            "in memory (set PATCHBAY_TEST_KEYCHAIN=1 in a D-Bus session for the real one)"
        }
    );

    let mut group = c.benchmark_group("authorize_to_stored_token");
    group.sample_size(20);

    // Each timed run starts with the receiver stopped, as when someone clicks Authorize; the
    // wait for it to stop after the previous flow (200 ms after the callback) is not timed.
    // Criterion plans from wall time here (the untimed ~200 ms wait included): 5 s gives 20
    // samples of 2 runs each.
    let receiver = rig(&fake, true);
    // One untimed authorization first: the registration (DCR) and the keychain read of the vault's
    // key happen once per instance, not per authorization.
    runtime.block_on(async {
        receiver.by_receiver().await;
        receiver.receiver_stopped().await;
    });
    group
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(20))
        .measurement_time(Duration::from_secs(5));
    group.bench_function("receiver", |b| {
        b.iter_custom(|iters| {
            let mut timed = Duration::ZERO;
            for _ in 0..iters {
                let t = Instant::now();
                runtime.block_on(receiver.by_receiver());
                timed += t.elapsed();
                runtime.block_on(receiver.receiver_stopped());
            }
            timed
        })
    });
    receiver.assert_stored();

    let paste = rig(&fake, false);
    runtime.block_on(paste.by_paste_back());
    group
        .sampling_mode(SamplingMode::Auto)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    group.bench_function("paste_back", |b| {
        b.iter(|| runtime.block_on(paste.by_paste_back()))
    });
    paste.assert_stored();
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
