//! A catalog entry's `timeout_ms` and `retry` reach the connection check through the core's
//! `Checker` (docs/catalog.md, "Connection settings"): a server on 127.0.0.1 that accepts and
//! never answers times out at the entry's limit, not the 15 s default, and is tried again as the
//! entry's `retry` says, the waits going through an injected sleeper (nothing sleeps for real).

use patchbay_check::Pacing;
use patchbay_core::{Checker, CheckerOptions, Patchbay, Paths};
use patchbay_vault::MemoryStore;
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A port on 127.0.0.1 that accepts connections and never says a word.
fn silent_server() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            held.push(stream);
        }
    });
    port
}

#[test]
fn an_entrys_timeout_ms_and_retry_shape_its_check() {
    let port = silent_server();
    let dir = tempfile::tempdir().unwrap();
    let catalog = dir.path().join("catalog.json");
    std::fs::write(
        &catalog,
        serde_json::to_string_pretty(&json!({
            "slow": {
                "type": "streamable-http",
                "url": format!("http://127.0.0.1:{port}/mcp"),
                "timeout_ms": 300,
                "retry": { "max": 1, "base_ms": 10 }
            }
        }))
        .unwrap(),
    )
    .unwrap();
    let paths = Paths::resolve(Some(dir.path().join("data")))
        .unwrap()
        .with_catalog_override(Some(catalog))
        .unwrap();
    let patchbay = Arc::new(Patchbay::with_store(paths, Arc::new(MemoryStore::new())).unwrap());

    let waits = Arc::new(Mutex::new(Vec::<Duration>::new()));
    let seen = waits.clone();
    let options = CheckerOptions {
        pacing: Pacing {
            sleep: Arc::new(move |d| {
                seen.lock().unwrap().push(d);
                Box::pin(async {})
            }),
            // The top of the jitter: 10 ms + 30 %.
            random: Arc::new(|| 1.0),
        },
        ..CheckerOptions::default()
    };
    let checker = Checker::new(patchbay, options).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let check = runtime.block_on(checker.check("slow")).unwrap();

    assert!(!check.ok);
    let error = check.error.as_ref().expect("an error");
    assert_eq!(error.kind, "timed_out", "{check:#?}");
    assert_eq!(
        error.message,
        "initialize took longer than 300 ms over streamable-http"
    );
    let tries: Vec<(u32, u64)> = check
        .attempts
        .iter()
        .map(|a| (a.retry, a.waited_ms))
        .collect();
    assert_eq!(tries, [(0, 0), (1, 13)], "one retry after 10 ms + 30 %");
    assert_eq!(*waits.lock().unwrap(), [Duration::from_millis(13)]);
    // Retries are part of one check: one entry on the health board's ring.
    assert_eq!(check.health.calls, 1);
    patchbay_e2e::secret_scan::SecretScan::new(&dir.path().join("data"))
        .none_issued("a silent server: no authorization; the modes of the data Patchbay made")
        .data_dir_made_by_patchbay()
        .assert_clean();
}
