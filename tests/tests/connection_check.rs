//! The connection check against real MCP servers on 127.0.0.1: the MCP TypeScript SDK's example
//! servers run as shipped (tests/src/sdk_servers.rs): streamable HTTP, legacy SSE, stdio, and
//! streamable HTTP behind OAuth. Through `patchbay check` as a process (its JSON and exit code),
//! and through the core's `Checker` in-process where a test needs an injected clock or a vault in
//! memory. Also stdio servers of one protocol revision each (tests/node/one-revision-stdio-server.mjs)
//! for the negotiated revision `patchbay check` reports. Nothing here reaches beyond the loopback
//! interface.

use chrono::{DateTime, Utc};
use patchbay_core::{
    Authorizer, AuthorizerOptions, Checker, CheckerOptions, Completion, Patchbay, Paths,
    StartOptions,
};
use patchbay_e2e::sdk_servers::{free_port, node_dir, stdio_command, SdkServer};
use patchbay_e2e::secret_scan::SecretScan;
use patchbay_e2e::{json, Sandbox};
use patchbay_status::Action;
use patchbay_vault::{MemoryStore, Secret};
use serde_json::{json as j, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

fn write_catalog(sandbox: &Sandbox, servers: Value) -> PathBuf {
    sandbox.write(
        "catalog.json",
        &serde_json::to_string_pretty(&j!({ "mcpServers": servers })).unwrap(),
    )
}

/// `patchbay check ARGS --json --catalog CATALOG`: the exit code and the document.
fn check_cli(sandbox: &Sandbox, catalog: &Path, args: &[&str]) -> (i32, Value) {
    let out = sandbox
        .command()
        .arg("check")
        .args(args)
        .args(["--json", "--catalog"])
        .arg(catalog)
        .output()
        .expect("run patchbay check");
    (out.status.code().unwrap_or(-1), json(&out))
}

fn find<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .find(|c| c["connector"] == name)
        .unwrap_or_else(|| panic!("no check of {name} in {doc:#}"))
}

fn tool_names(check: &Value) -> Vec<String> {
    check["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

/// A clock the test moves by hand.
struct ManualClock(Arc<AtomicI64>);

impl ManualClock {
    fn new() -> ManualClock {
        ManualClock(Arc::new(AtomicI64::new(Utc::now().timestamp_millis())))
    }
    fn clock(&self) -> patchbay_core::patchbay::Clock {
        let ms = self.0.clone();
        Arc::new(move || DateTime::from_timestamp_millis(ms.load(Ordering::SeqCst)).unwrap())
    }
    fn advance_secs(&self, secs: i64) {
        self.0.fetch_add(secs * 1000, Ordering::SeqCst);
    }
}

/// The core on the sandbox, its vault key in memory.
fn core(sandbox: &Sandbox, catalog: &Path, clock: Option<&ManualClock>) -> Arc<Patchbay> {
    let paths = Paths::resolve(Some(sandbox.path().to_path_buf()))
        .unwrap()
        .with_catalog_override(Some(catalog.to_path_buf()))
        .unwrap();
    let mut patchbay = Patchbay::with_store(paths, Arc::new(MemoryStore::new())).unwrap();
    if let Some(clock) = clock {
        patchbay = patchbay.with_clock(clock.clock());
    }
    Arc::new(patchbay)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn streamable_http_sse_and_stdio_servers_answer_with_their_tools() {
    let http = SdkServer::streamable_http();
    let sse = SdkServer::sse();
    let (command, args) = stdio_command();
    let sandbox = Sandbox::new(false);
    let catalog = write_catalog(
        &sandbox,
        j!({
            "sdk-http": { "type": "streamable-http", "url": http.url() },
            "sdk-sse": { "type": "sse", "url": sse.url() },
            "sdk-stdio": { "type": "stdio", "command": command, "args": args }
        }),
    );
    let (code, doc) = check_cli(&sandbox, &catalog, &[]);
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(doc["version"], 1);

    for (name, transport, server, tool) in [
        (
            "sdk-http",
            "streamable-http",
            "simple-streamable-http-server",
            "sdk-http.greet",
        ),
        (
            "sdk-sse",
            "sse",
            "simple-sse-server",
            "sdk-sse.start-notification-stream",
        ),
        (
            "sdk-stdio",
            "stdio",
            "mcp-output-schema-high-level-example",
            "sdk-stdio.get_weather",
        ),
    ] {
        let c = find(&doc, name);
        assert_eq!(c["ok"], true, "{c:#}");
        assert_eq!(c["transport"], transport, "{c:#}");
        assert_eq!(c["configured_transport"], transport);
        assert_eq!(c["fell_back_to"], Value::Null);
        assert_eq!(c["server"]["name"], server, "{c:#}");
        assert!(tool_names(c).contains(&tool.to_owned()), "{c:#}");
        assert!(c["latency_ms"].as_u64().is_some(), "{c:#}");
        assert_eq!(c["health"]["calls"], 1);
        assert_eq!(c["health"]["failures"], 0);
        assert_eq!(c["attempts"].as_array().unwrap().len(), 1);
    }
    // Every tool is `<connector>.<tool>`.
    for name in tool_names(find(&doc, "sdk-http")) {
        assert!(name.starts_with("sdk-http."), "{name}");
    }
    assert!(
        sandbox.path().join("health.sqlite").is_file(),
        "the health board lives in its own file"
    );

    // The text form says the same.
    let out = sandbox
        .command()
        .args(["check", "sdk-sse", "--catalog"])
        .arg(&catalog)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("sdk-sse: ok over sse"), "{text}");
    assert!(
        text.contains("tools: sdk-sse.start-notification-stream"),
        "{text}"
    );
    assert!(text.contains("health: 2 checks, 0% failed"), "{text}");
    SecretScan::new(sandbox.path())
        .issued_by("the streamable HTTP server", &http)
        .issued_by("the SSE server", &sse)
        .none_issued("open servers: no authorization")
        .assert_clean();
}

#[test]
fn check_reports_the_revision_it_negotiated_with_each_server() {
    let sandbox = Sandbox::new(false);
    let script = node_dir().join("one-revision-stdio-server.mjs");
    let server = |revision: &str| {
        let log = sandbox.path().join(format!("seen-{revision}.log"));
        j!({ "type": "stdio", "command": "node",
             "args": [script.display().to_string(), revision, log.display().to_string()] })
    };
    let catalog = write_catalog(
        &sandbox,
        j!({ "modern": server("2026-07-28"), "legacy": server("2025-11-25") }),
    );
    let (code, doc) = check_cli(&sandbox, &catalog, &[]);
    assert_eq!(code, 0, "{doc:#}");
    for (name, server, revision) in [
        ("modern", "stdio-2026", "2026-07-28"),
        ("legacy", "stdio-2025", "2025-11-25"),
    ] {
        let c = find(&doc, name);
        assert_eq!(c["ok"], true, "{c:#}");
        assert_eq!(c["server"]["name"], server, "{c:#}");
        assert_eq!(c["server"]["protocol_version"], revision, "{c:#}");
        assert_eq!(tool_names(c), [format!("{name}.lookup")], "{c:#}");
    }

    // The text form names the revision.
    let out = sandbox
        .command()
        .args(["check", "--catalog"])
        .arg(&catalog)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("stdio-2026 2.0.0 (protocol 2026-07-28)"),
        "{text}"
    );
    assert!(
        text.contains("stdio-2025 1.2.3 (protocol 2025-11-25)"),
        "{text}"
    );
}

/// Processes whose command line contains `marker`.
#[cfg(target_os = "linux")]
fn processes_with(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if text.contains(marker) {
            found.push(format!("{}: {text}", entry.file_name().to_string_lossy()));
        }
    }
    found
}

#[cfg(target_os = "linux")]
#[test]
fn a_checked_stdio_server_is_started_with_its_environment_and_stopped() {
    let (command, mut args) = stdio_command();
    let marker = format!("--patchbay-check-marker-{}", std::process::id());
    args.push(marker.clone());
    let sandbox = Sandbox::new(false);
    let catalog = write_catalog(
        &sandbox,
        j!({
            "weather": { "type": "stdio", "command": command, "args": args,
                         "env": { "WEATHER_TOKEN": "${WEATHER_TOKEN}" } },
            "missing": { "type": "stdio", "command": "node", "env": { "X": "${NOT_SET_ANYWHERE_42}" } }
        }),
    );
    let patchbay = core(&sandbox, &catalog, None);
    patchbay
        .set_secret("WEATHER_TOKEN", &Secret::new("weather-secret-value"))
        .unwrap();
    let checker = Checker::new(patchbay, CheckerOptions::default()).unwrap();
    let rt = runtime();
    let c = rt.block_on(checker.check("weather")).unwrap();
    assert!(c.ok, "{c:#?}");
    assert_eq!(c.tools[0].name, "weather.get_weather");
    assert!(
        processes_with(&marker).is_empty(),
        "the stdio server outlived its check: {:?}",
        processes_with(&marker)
    );
    let text = serde_json::to_string(&c).unwrap();
    assert!(!text.contains("weather-secret-value"), "{text}");

    // A variable without a value: nothing is started, and it says which.
    let c = rt.block_on(checker.check("missing")).unwrap();
    assert!(!c.ok);
    assert!(
        c.skipped
            .as_deref()
            .unwrap()
            .contains("NOT_SET_ANYWHERE_42"),
        "{c:#?}"
    );
    assert_eq!(c.action, Some(Action::SetVariable));
    assert_eq!(
        c.health.calls, 0,
        "a skipped check is not a failure of the server"
    );
    SecretScan::new(sandbox.path())
        .secret(
            "the WEATHER_TOKEN value the server got",
            "weather-secret-value",
        )
        .assert_clean();
}

#[test]
fn a_server_speaking_the_other_http_transport_falls_back_and_can_be_written_back() {
    let sse = SdkServer::sse();
    let http = SdkServer::streamable_http();
    let sandbox = Sandbox::new(false);
    // Literal credential headers: the status offers them without any OAuth.
    let catalog = write_catalog(
        &sandbox,
        j!({
            "only-sse": { "type": "streamable-http", "url": sse.url(), "title": "Only SSE",
                          "headers": { "X-API-Key": "literal-key-1" }, "x-note": "keep me" },
            "only-http": { "type": "sse", "url": http.url() }
        }),
    );
    let before = std::fs::read_to_string(&catalog).unwrap();
    let (code, doc) = check_cli(&sandbox, &catalog, &[]);
    assert_eq!(code, 0, "{doc:#}");

    let c = find(&doc, "only-sse");
    assert_eq!(c["ok"], true, "{c:#}");
    assert_eq!(c["configured_transport"], "streamable-http");
    assert_eq!(c["transport"], "sse");
    assert_eq!(c["fell_back_to"], "sse");
    assert_eq!(c["write_back"]["transport"], "sse");
    let attempts = c["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 2, "{c:#}");
    assert_eq!(attempts[0]["transport"], "streamable-http");
    assert_eq!(attempts[0]["error"]["kind"], "rejected", "{c:#}");
    // Express answers a POST to the SSE example's stream with 404.
    assert_eq!(attempts[0]["error"]["http_status"], 404, "{c:#}");
    assert!(tool_names(c).contains(&"only-sse.start-notification-stream".to_owned()));
    assert!(
        c["advice"].as_str().unwrap().contains("--write-back"),
        "{c:#}"
    );

    let c = find(&doc, "only-http");
    assert_eq!(c["ok"], true, "{c:#}");
    assert_eq!(c["fell_back_to"], "streamable-http", "{c:#}");
    let attempts = c["attempts"].as_array().unwrap();
    assert_eq!(attempts[0]["error"]["kind"], "rejected", "{c:#}");

    // Reported, not written, until asked.
    assert_eq!(std::fs::read_to_string(&catalog).unwrap(), before);
    assert!(!doc["checks"].to_string().contains("literal-key-1"));

    let (code, doc) = check_cli(&sandbox, &catalog, &["only-sse", "--write-back"]);
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(doc["written_back"][0]["transport"], "sse", "{doc:#}");
    let written: Value = serde_json::from_str(&std::fs::read_to_string(&catalog).unwrap()).unwrap();
    let entry = &written["mcpServers"]["only-sse"];
    assert_eq!(entry["type"], "sse");
    assert_eq!(entry["x-note"], "keep me", "unknown keys are kept");
    assert_eq!(entry["headers"]["X-API-Key"], "literal-key-1");
    assert_eq!(entry["title"], "Only SSE");
    assert_eq!(
        written["mcpServers"]["only-http"]["type"], "sse",
        "the other entry is untouched"
    );

    // Now it answers on the first try.
    let (_, doc) = check_cli(&sandbox, &catalog, &["only-sse"]);
    let c = find(&doc, "only-sse");
    assert_eq!(c["ok"], true);
    assert_eq!(c["fell_back_to"], Value::Null);
    assert_eq!(c["attempts"].as_array().unwrap().len(), 1);
    SecretScan::new(sandbox.path())
        .none_issued("open servers: no authorization")
        .assert_clean();
}

#[test]
fn a_refused_port_is_unreachable_and_gets_no_fallback() {
    let port = free_port();
    let sandbox = Sandbox::new(false);
    let catalog = write_catalog(
        &sandbox,
        j!({ "gone": { "type": "streamable-http", "url": format!("http://127.0.0.1:{port}/mcp") } }),
    );
    let (code, doc) = check_cli(&sandbox, &catalog, &["gone"]);
    assert_eq!(code, 1, "a failed check needs attention: {doc:#}");
    let c = find(&doc, "gone");
    assert_eq!(c["ok"], false);
    assert_eq!(c["error"]["kind"], "unreachable", "{c:#}");
    assert_eq!(c["error"]["retryable"], true);
    assert_eq!(
        c["attempts"].as_array().unwrap().len(),
        1,
        "no fallback for an unreachable server: {c:#}"
    );
    assert_eq!(c["fell_back_to"], Value::Null);
    assert_eq!(c["consecutive_failures"], 1);
    assert_eq!(c["degraded"], Value::Null, "one failure is not degraded");
    assert_eq!(c["health"]["failures"], 1);
    assert!(
        c["health"]["last_error"]
            .as_str()
            .unwrap()
            .contains("refused"),
        "{c:#}"
    );

    // A name the catalog does not have is an error (exit 2), not a failed check.
    let out = sandbox
        .command()
        .args(["check", "nope", "--catalog"])
        .arg(&catalog)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    SecretScan::new(sandbox.path())
        .none_issued("nothing listens: no authorization")
        .assert_clean();
}

#[test]
fn three_spaced_failures_degrade_a_connector_offered_lists_it_and_a_success_clears_it() {
    let port = free_port();
    let sandbox = Sandbox::new(false);
    // A static credential header: Ready by the status, so offered unless degraded.
    let catalog = write_catalog(
        &sandbox,
        j!({ "flaky": { "type": "sse", "url": format!("http://127.0.0.1:{port}/mcp"),
                        "headers": { "X-API-Key": "literal" } } }),
    );
    let offered = |sandbox: &Sandbox| {
        let out = sandbox
            .command()
            .args(["offered", "--json", "--catalog"])
            .arg(&catalog)
            .output()
            .unwrap();
        json(&out)
    };
    let before = offered(&sandbox);
    assert_eq!(before["servers"][0]["name"], "flaky", "{before:#}");

    let time = ManualClock::new();
    let checker = Checker::new(
        core(&sandbox, &catalog, Some(&time)),
        CheckerOptions::default(),
    )
    .unwrap();
    let rt = runtime();
    let check = || rt.block_on(checker.check("flaky")).unwrap();

    let c = check();
    assert!(!c.ok);
    assert_eq!(c.error.as_ref().unwrap().kind, "unreachable");
    assert_eq!(c.consecutive_failures, 1);
    // Again at once: inside the 30 s backoff, so not counted.
    let c = check();
    assert_eq!(c.consecutive_failures, 1, "{c:#?}");
    assert_eq!(c.health.failures, 2, "but recorded");
    time.advance_secs(30);
    let c = check();
    assert_eq!(c.consecutive_failures, 2);
    assert!(c.degraded.is_none());
    time.advance_secs(60);
    let c = check();
    assert_eq!(c.consecutive_failures, 3);
    let degraded = c
        .degraded
        .clone()
        .expect("degraded after the third counted failure");
    assert!(degraded.error.contains("refused"), "{degraded:?}");

    let board = checker.board().unwrap();
    let row = &board.connectors[0];
    assert_eq!(row.connector, "flaky");
    assert!(row.degraded.is_some());
    assert_eq!(row.stats.calls, 4);
    assert_eq!(row.stats.fail_rate, 1.0);

    let during = offered(&sandbox);
    assert!(
        during["servers"].as_array().unwrap().is_empty(),
        "{during:#}"
    );
    let line = &during["unavailable"][0];
    assert_eq!(line["name"], "flaky", "{during:#}");
    assert_eq!(line["degraded"], true);
    assert!(
        line["reason"].as_str().unwrap().starts_with("degraded"),
        "{line:#}"
    );

    // The server comes up on that port: one passing check clears it.
    let server = SdkServer::sse_on(port);
    time.advance_secs(5);
    let c = check();
    assert!(c.ok, "{c:#?}\n{}", server.output());
    assert!(c.degraded.is_none());
    assert_eq!(c.consecutive_failures, 0);
    let after = offered(&sandbox);
    assert_eq!(after["servers"][0]["name"], "flaky", "{after:#}");
    assert!(
        after["unavailable"].as_array().unwrap().is_empty(),
        "{after:#}"
    );
    let board = checker.board().unwrap();
    let row = &board.connectors[0];
    assert_eq!(row.stats.calls, 5);
    assert!(row.stats.p50_ms.is_some());
    assert_eq!(
        row.tools.as_ref().unwrap().tools[0].name,
        "flaky.start-notification-stream"
    );
    SecretScan::new(sandbox.path())
        .issued_by("the SSE server", &server)
        .none_issued("an open server: no authorization")
        .assert_clean();
}

/// Follows a consent URL one step as a browser would (the SDK approves at once with a 302) and
/// returns the redirect's Location.
fn consent(url: &str) -> String {
    let out = Command::new("curl")
        .args(["-sS", "--max-time", "20", "-o", "/dev/null"])
        .args(["-w", "%{http_code} %{redirect_url}", url])
        .output()
        .expect("curl");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (code, location) = text.split_once(' ').unwrap_or((&text, ""));
    assert_eq!(code, "302", "{text}");
    location.to_string()
}

#[test]
fn a_401_means_needs_authorization_for_oauth_and_names_the_header_for_a_static_credential() {
    let server = SdkServer::streamable_http_oauth();
    let sandbox = Sandbox::new(false);
    let catalog = write_catalog(
        &sandbox,
        j!({
            "sdk": { "type": "streamable-http", "url": server.localhost_url() },
            "keyed": { "type": "streamable-http", "url": server.localhost_url(),
                       "headers": { "X-API-Key": "${SDK_API_KEY}" } }
        }),
    );
    let patchbay = core(&sandbox, &catalog, None);
    patchbay
        .set_secret("SDK_API_KEY", &Secret::new("wrong-static-key"))
        .unwrap();
    let checker = Checker::new(patchbay.clone(), CheckerOptions::default()).unwrap();
    let rt = runtime();

    let c = rt.block_on(checker.check("sdk")).unwrap();
    assert!(!c.ok);
    let error = c.error.as_ref().unwrap();
    assert_eq!(error.kind, "needs_authorization", "{c:#?}");
    assert_eq!(c.transition, Some(patchbay_check::Transition::NotCounted));
    assert!(c.degraded.is_none(), "{c:#?}");
    assert_eq!(error.http_status, Some(401));
    assert_eq!(c.action, Some(Action::Authorize));
    assert_eq!(c.attempts.len(), 1, "a 401 is no reason to try SSE");

    let c = rt.block_on(checker.check("keyed")).unwrap();
    let error = c.error.as_ref().unwrap();
    assert_eq!(error.kind, "credential_rejected", "{c:#?}");
    assert_ne!(
        c.action,
        Some(Action::Authorize),
        "never Authorize for a static header"
    );
    assert_eq!(c.action, Some(Action::SetVariable));
    let advice = c.advice.as_deref().unwrap();
    assert!(
        advice.contains("SDK_API_KEY") && advice.contains("X-API-Key"),
        "{advice}"
    );
    assert!(error.message.contains("X-API-Key"), "{error:?}");
    assert!(
        c.degraded.is_some(),
        "a rejected static credential does not become right in 30 seconds"
    );
    assert!(!serde_json::to_string(&c)
        .unwrap()
        .contains("wrong-static-key"));

    // Authorize (paste-back, the test as the browser), then the stored token gets it in.
    let auth = Authorizer::new(
        patchbay.clone(),
        AuthorizerOptions {
            use_receiver: false,
            ..AuthorizerOptions::default()
        },
    );
    rt.block_on(async {
        let started = auth
            .start(
                "sdk",
                StartOptions {
                    open_browser: false,
                    ..StartOptions::default()
                },
            )
            .await
            .expect("start authorizing");
        assert!(matches!(started.completion, Completion::PasteBack { .. }));
        let url = started.authorize_url.clone();
        let location = tokio::task::spawn_blocking(move || consent(&url))
            .await
            .unwrap();
        auth.complete_pasted("sdk", &location)
            .await
            .expect("complete by paste-back");
        auth.shutdown().await;
    });
    let c = rt.block_on(checker.check("sdk")).unwrap();
    assert!(c.ok, "{c:#?}\n{}", server.output());
    assert!(c.tools.iter().any(|t| t.name == "sdk.greet"), "{c:#?}");
    // The 401 before was "authorize", not "the server is gone": never counted against it.
    assert_eq!(c.transition, Some(patchbay_check::Transition::Healthy));

    let key = patchbay
        .status()
        .connector("sdk")
        .unwrap()
        .credential
        .clone()
        .unwrap()
        .key;
    let token = patchbay
        .vault()
        .credential_tokens(&patchbay_catalog::CredentialKey(key))
        .unwrap()
        .unwrap()
        .access_token;
    let text = serde_json::to_string(&c).unwrap();
    assert!(
        !text.contains(token.expose()),
        "the token reached the check's JSON"
    );
    let board = serde_json::to_string(&checker.board().unwrap()).unwrap();
    assert!(!board.contains(token.expose()));
    SecretScan::new(sandbox.path())
        .issued_by("the SDK OAuth server", &server)
        .secret("the static API key", "wrong-static-key")
        .assert_clean();
}

#[test]
fn the_periodic_check_takes_only_the_connectors_whose_turn_has_come() {
    let sse = SdkServer::sse();
    let port = free_port();
    let sandbox = Sandbox::new(false);
    let catalog = write_catalog(
        &sandbox,
        j!({
            "up": { "type": "sse", "url": sse.url() },
            "down": { "type": "sse", "url": format!("http://127.0.0.1:{port}/mcp") },
            "declared": { "type": "sse", "url": sse.url(), "unavailable": "Broken on purpose." }
        }),
    );
    let time = ManualClock::new();
    let checker = Checker::new(
        core(&sandbox, &catalog, Some(&time)),
        CheckerOptions::default(),
    )
    .unwrap();
    let rt = runtime();
    let every = std::time::Duration::from_secs(600);
    let due = |rt: &tokio::runtime::Runtime| -> Vec<String> {
        let mut names: Vec<String> = rt
            .block_on(checker.check_due(every))
            .unwrap()
            .into_iter()
            .map(|c| c.connector)
            .collect();
        names.sort();
        names
    };
    // Never checked: both are due; a declared-unavailable one is left alone.
    assert_eq!(due(&rt), ["down", "up"]);
    assert_eq!(due(&rt), Vec::<String>::new(), "nothing is due right after");
    // The failing one comes back after its 30 s backoff, the healthy one after the interval.
    time.advance_secs(30);
    assert_eq!(due(&rt), ["down"]);
    time.advance_secs(600);
    assert_eq!(due(&rt), ["down", "up"]);
    assert_eq!(checker.health_store().stats("declared").unwrap().calls, 0);
    SecretScan::new(sandbox.path())
        .none_issued("open servers: no authorization")
        .assert_clean();
}
