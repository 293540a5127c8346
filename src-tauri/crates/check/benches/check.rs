//! What one connection check costs, per transport, against the MCP TypeScript SDK's example
//! servers on 127.0.0.1 (tests/src/sdk_servers.rs; `npm ci` in tests/node first):
//! - `streamable_http`: `simpleStreamableHttp.js`: POST `initialize`, the `initialized`
//!   notification, the session's GET stream, `tools/list`, then the session's DELETE;
//! - `sse`: `simpleSseServer.js`: GET the event stream, wait for its endpoint, POST `initialize`
//!   and `tools/list` with the answers on the stream;
//! - `stdio`: `node mcpServerOutputSchema.js` spawned in its own process group, the handshake
//!   over its pipes, stdin closed and the group stopped: node's start-up is most of it.
//!
//! Criterion times the whole check (goodbye included). Beside it, the median of what the check
//! itself reports as latency (connect, `initialize`, `tools/list`; no goodbye) is printed.

#[allow(dead_code)]
#[path = "../../../../tests/src/sdk_servers.rs"]
mod sdk_servers;

use criterion::{criterion_group, criterion_main, Criterion, SamplingMode};
use patchbay_check::{check, AuthKind, CheckTarget, Endpoint, HttpEndpoint, StdioLaunch, Timeouts};
use patchbay_vault::Secret;
use sdk_servers::{stdio_command, SdkServer};
use std::time::{Duration, Instant};

fn http_target(name: &str, endpoint: Endpoint) -> CheckTarget {
    CheckTarget {
        connector: name.into(),
        endpoint,
        auth: AuthKind::OAuth { token_sent: false },
        extra_secrets: vec![],
        request_timeout: None,
        retry: None,
    }
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let http = SdkServer::streamable_http();
    let sse = SdkServer::sse();
    let (command, args) = stdio_command();
    let targets = [
        (
            "streamable_http",
            http_target(
                "http",
                Endpoint::StreamableHttp(HttpEndpoint {
                    url: http.url(),
                    headers: vec![],
                }),
            ),
        ),
        (
            "sse",
            http_target(
                "sse",
                Endpoint::Sse(HttpEndpoint {
                    url: sse.url(),
                    headers: vec![],
                }),
            ),
        ),
        (
            "stdio",
            CheckTarget {
                connector: "stdio".into(),
                endpoint: Endpoint::Stdio(StdioLaunch {
                    command,
                    args: args.into_iter().map(Secret::new).collect(),
                    env: vec![],
                    cwd: None,
                }),
                auth: AuthKind::Process,
                extra_secrets: vec![],
                request_timeout: None,
                retry: None,
            },
        ),
    ];
    let timeouts = Timeouts::default();
    let mut reported: Vec<(&str, Vec<Duration>)> = Vec::new();

    let mut group = c.benchmark_group("check");
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(9));
    for (name, target) in &targets {
        let mut latencies = Vec::new();
        group.bench_function(*name, |b| {
            b.iter_custom(|iterations| {
                let mut total = Duration::ZERO;
                for _ in 0..iterations {
                    let started = Instant::now();
                    let outcome = runtime.block_on(check(target, &timeouts));
                    total += started.elapsed();
                    match &outcome.result {
                        Ok(h) => latencies.push(h.latency),
                        Err(e) => panic!("{name} failed: {e}"),
                    }
                }
                total
            })
        });
        reported.push((name, latencies));
    }
    group.finish();

    for (name, mut latencies) in reported {
        latencies.sort();
        let at = |q: f64| latencies[((latencies.len() - 1) as f64 * q).round() as usize];
        eprintln!(
            "{name}: the check's own latency (connect + initialize + tools/list) over {} checks: median {:.2} ms, p95 {:.2} ms",
            latencies.len(),
            at(0.5).as_secs_f64() * 1000.0,
            at(0.95).as_secs_f64() * 1000.0
        );
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
