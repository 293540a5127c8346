//! What resolving every connector once costs the gateway (it resolves each connector again every
//! `resolve_ttl` while it is used), for 10, 100 and 1,000 connectors in use: each resolve reading
//! the catalog and the connectors in use itself, against the gateway's shared read (one per
//! second, `Upstreams::with_snapshot_ttl`). In-memory secret store; prints medians, asserts
//! nothing.
//!
//!   cargo bench -p patchbay-gateway --bench resolve

use patchbay_core::{Patchbay, Paths};
use patchbay_gateway::upstream::Upstreams;
use patchbay_vault::{MemoryStore, SecretStore};
use std::fmt::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn patchbay(dir: &std::path::Path, n: usize) -> Arc<Patchbay> {
    let mut catalog = String::from("{\"mcpServers\":{");
    for i in 0..n {
        if i > 0 {
            catalog.push(',');
        }
        let _ = write!(
            catalog,
            "\"c{i}\":{{\"type\":\"http\",\"url\":\"https://mcp{i}.example.com/mcp\",\"headers\":{{\"X-Team\":\"t{i}\"}}}}"
        );
    }
    catalog.push_str("}}");
    let file = dir.join("catalog.json");
    std::fs::write(&file, catalog).unwrap();
    let paths = Paths::resolve(Some(dir.to_path_buf()))
        .unwrap()
        .with_catalog_override(Some(file))
        .unwrap();
    let store: Arc<dyn SecretStore> = Arc::new(MemoryStore::default());
    Arc::new(Patchbay::with_store(paths, store).unwrap())
}

/// The median time to resolve all `n` connectors once.
fn round(upstreams: &Upstreams, n: usize) -> Duration {
    let mut samples: Vec<Duration> = (0..5)
        .map(|_| {
            let started = Instant::now();
            for i in 0..n {
                upstreams.resolve(&format!("c{i}")).expect("resolves");
            }
            started.elapsed()
        })
        .collect();
    samples.sort();
    samples[samples.len() / 2]
}

fn main() {
    for n in [10, 100, 1000] {
        let dir = tempfile::tempdir().unwrap();
        let patchbay = patchbay(dir.path(), n);
        let each = round(&Upstreams::new(patchbay.clone(), None), n);
        let shared = round(
            &Upstreams::new(patchbay, None).with_snapshot_ttl(Duration::from_secs(1)),
            n,
        );
        println!(
            "{n:>4} connectors, every one resolved once: each reading {:.1} ms, one shared read {:.1} ms",
            each.as_secs_f64() * 1e3,
            shared.as_secs_f64() * 1e3
        );
    }
}
