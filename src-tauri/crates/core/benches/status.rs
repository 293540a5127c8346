//! How long status takes for 100 and 1,000 connectors, keychain included.
//!
//! `cold` opens Patchbay afresh (so the vault key is read from the keychain once) and computes the
//! status, as `patchbay status` does; `warm` recomputes on an open instance, as the tray does on
//! each change; `catalog_in_use` is what resolving one connector reads (the gateway, `connect`).
//! With PATCHBAY_TEST_KEYCHAIN=1 the real OS keychain is used (Secret Service through
//! gnome-keyring in CI); otherwise the in-memory store, and the output says so.

use chrono::{Duration, Utc};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use patchbay_core::{Patchbay, Paths};
use patchbay_vault::{CredentialRow, KeyringStore, MemoryStore, Secret, SecretStore, TokenSet};
use std::fmt::Write;
use std::sync::Arc;

fn real_keychain() -> bool {
    std::env::var("PATCHBAY_TEST_KEYCHAIN").as_deref() == Ok("1")
}

/// A catalog of `n` connectors: a third OAuth servers (two thirds of them authorized), a third
/// static-header servers whose token is in the vault, a third stdio servers.
fn catalog(n: usize) -> String {
    let mut out = String::from("{\"mcpServers\":{");
    for i in 0..n {
        if i > 0 {
            out.push(',');
        }
        let _ = match i % 3 {
            0 => write!(out, "\"oauth{i}\":{{\"type\":\"http\",\"url\":\"https://mcp{i}.example.com/mcp\"}}"),
            1 => write!(out, "\"keyed{i}\":{{\"type\":\"http\",\"url\":\"https://k{i}.example.com/mcp\",\"headers\":{{\"X-API-Key\":\"${{KEY_{i}}}\"}}}}"),
            _ => write!(out, "\"stdio{i}\":{{\"type\":\"stdio\",\"command\":\"npx\",\"args\":[\"-y\",\"server-{i}\"],\"env\":{{\"LEVEL\":\"${{LEVEL:-info}}\"}}}}"),
        };
    }
    out.push_str("}}");
    out
}

struct Setup {
    _dir: tempfile::TempDir,
    paths: Paths,
    store: Arc<dyn SecretStore>,
}

fn setup(n: usize) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let catalog_file = dir.path().join("catalog.json");
    std::fs::write(&catalog_file, catalog(n)).unwrap();
    let paths = Paths::resolve(Some(dir.path().to_path_buf()))
        .unwrap()
        .with_catalog_override(Some(catalog_file))
        .unwrap();
    let store: Arc<dyn SecretStore> = if real_keychain() {
        Arc::new(KeyringStore::new("Patchbay bench"))
    } else {
        Arc::new(MemoryStore::default())
    };
    let patchbay = Patchbay::with_store(paths.clone(), store.clone()).unwrap();
    let now = Utc::now();
    for i in (1..n).step_by(3) {
        patchbay
            .set_secret(&format!("KEY_{i}"), &Secret::new(format!("key-{i}")))
            .unwrap();
    }
    let catalog = patchbay.catalog();
    for (i, entry) in catalog
        .servers()
        .filter(|e| e.name.0.starts_with("oauth"))
        .enumerate()
    {
        if i % 3 == 2 {
            continue;
        }
        let key = entry.credential_key(&|_| None).unwrap().unwrap();
        let row = CredentialRow {
            server_name: entry.name.0.clone(),
            credential_key: key,
            server_url: entry.transport.url().map(str::to_owned),
            expires_at: Some(now + Duration::hours(1)),
            has_refresh_token: true,
            one_shot: false,
            issuer: None,
            client_id: None,
            scope: None,
            updated_at: now,
            rotated_by: None,
            rotated_at: None,
        };
        let tokens = TokenSet {
            access_token: Secret::new(format!("at-{i}")),
            refresh_token: Some(Secret::new(format!("rt-{i}"))),
        };
        patchbay.vault().put_credential(&row, &tokens).unwrap();
    }
    let report = patchbay.status();
    assert_eq!(report.connectors.len(), n);
    Setup {
        _dir: dir,
        paths,
        store,
    }
}

fn bench(c: &mut Criterion) {
    eprintln!(
        "status benchmark: {} secret store",
        if real_keychain() {
            "real OS keychain"
        } else {
            "in-memory"
        }
    );
    let mut group = c.benchmark_group("status");
    group.sample_size(10);
    for n in [100usize, 1000] {
        let setup = setup(n);
        group.bench_with_input(BenchmarkId::new("cold", n), &n, |b, _| {
            b.iter(|| {
                let patchbay =
                    Patchbay::with_store(setup.paths.clone(), setup.store.clone()).unwrap();
                patchbay.status()
            })
        });
        let patchbay = Patchbay::with_store(setup.paths.clone(), setup.store.clone()).unwrap();
        group.bench_with_input(BenchmarkId::new("warm", n), &n, |b, _| {
            b.iter(|| patchbay.status())
        });
        // What resolving one connector asks (the gateway every 5 s per connector, every
        // `patchbay connect`): the catalog and the names in use.
        group.bench_with_input(BenchmarkId::new("catalog_in_use", n), &n, |b, _| {
            b.iter(|| patchbay.catalog_in_use())
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
