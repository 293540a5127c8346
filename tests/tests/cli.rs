//! The `patchbay` CLI run as a process against fixture catalogs in throwaway data directories.
//! Tests that store secrets use the real OS keychain (Secret Service via gnome-keyring in CI).

use chrono::{Duration, Utc};
use patchbay_catalog::CredentialKey;
use patchbay_e2e::secret_scan::SecretScan;
use patchbay_e2e::{json, require_keychain, state_of, Sandbox};
use patchbay_vault::{CredentialRow, Secret, TokenSet};

fn stdout(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn status_json_reports_every_local_state_sorted_problems_first() {
    let sandbox = Sandbox::new(false);
    let catalog = sandbox.fixture("mixed.json");
    let out = sandbox.run(&["status", "--json", "--catalog", catalog.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "stderr: {}", stderr(&out));
    let report = json(&out);
    assert_eq!(report["version"], 1);

    assert_eq!(state_of(&report, "everything"), "no_credential_required");
    assert_eq!(state_of(&report, "notion"), "needs_authorization");
    // Idempotency-Key and X-Author are not credential headers: still OAuth-capable.
    assert_eq!(state_of(&report, "idempotent"), "needs_authorization");
    assert_eq!(state_of(&report, "github"), "missing_configuration");
    assert_eq!(state_of(&report, "brave"), "missing_configuration");
    assert_eq!(state_of(&report, "strad"), "unavailable");
    assert_eq!(
        state_of(&report, "blank-unavailable"),
        "no_credential_required"
    );
    assert_eq!(state_of(&report, "broken"), "probe_failed");

    let rows = report["connectors"].as_array().unwrap();
    let severities: Vec<u64> = rows
        .iter()
        .map(|r| r["severity"].as_u64().unwrap())
        .collect();
    let mut sorted = severities.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(severities, sorted, "rows are not sorted by severity");
    assert_eq!(rows[0]["name"], "broken");
    let attention = rows.iter().filter(|r| r["needs_attention"] == true).count();
    assert_eq!(
        report["need_attention"].as_u64().unwrap() as usize,
        attention
    );
    assert_eq!(attention, 6);

    let github = rows.iter().find(|r| r["name"] == "github").unwrap();
    assert_eq!(github["missing_variables"][0]["name"], "GITHUB_TOKEN");
    assert_eq!(
        github["missing_variables"][0]["field"],
        "headers.Authorization"
    );
    assert!(github["detail"]
        .as_str()
        .unwrap()
        .contains("patchbay secret set GITHUB_TOKEN"));
    assert_eq!(github["action"], "set_variable");
    // A ${VAR:-default} never counts as missing.
    let brave = rows.iter().find(|r| r["name"] == "brave").unwrap();
    assert_eq!(brave["missing_variables"].as_array().unwrap().len(), 1);

    let strad = rows.iter().find(|r| r["name"] == "strad").unwrap();
    assert_eq!(
        strad["unavailable_reason"],
        "The endpoint accepts only static bearer tokens and exposes no OAuth discovery."
    );

    let broken = rows.iter().find(|r| r["name"] == "broken").unwrap();
    let detail = broken["detail"].as_str().unwrap();
    assert!(detail.contains("mixed.json"), "{detail}");
    assert!(detail.contains("broken"), "{detail}");
    assert!(detail.contains("url"), "{detail}");

    let notion = rows.iter().find(|r| r["name"] == "notion").unwrap();
    assert_eq!(notion["action"], "authorize");
    assert_eq!(notion["blocks_start"], true);
}

#[test]
fn an_environment_variable_resolves_a_placeholder() {
    let sandbox = Sandbox::new(false);
    let catalog = sandbox.fixture("mixed.json");
    let out = sandbox
        .command()
        .env("GITHUB_TOKEN", "ghp_from_env")
        .args(["status", "--json", "--catalog", catalog.to_str().unwrap()])
        .output()
        .unwrap();
    let report = json(&out);
    assert_eq!(state_of(&report, "github"), "ready");
    assert!(
        !stdout(&out).contains("ghp_from_env"),
        "a secret reached the output"
    );
}

#[test]
fn status_table_has_the_headline_first_and_exit_code_zero_when_all_is_well() {
    let sandbox = Sandbox::new(false);
    let catalog = sandbox.fixture("all-ready.json");
    let out = sandbox.run(&["status", "--catalog", catalog.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let text = stdout(&out);
    assert!(text.starts_with("All 2 connectors are fine"), "{text}");
    assert!(text.contains("No credential required"));

    let mixed = sandbox.fixture("mixed.json");
    let out = sandbox.run(&["status", "--catalog", mixed.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    assert!(text.starts_with("6 need attention"), "{text}");
    let broken_at = text.find("broken").unwrap();
    let everything_at = text.find("everything").unwrap();
    assert!(
        broken_at < everything_at,
        "problems are not listed first:\n{text}"
    );

    // A row that needs authorizing says the command, the name quoted for a shell when it must be.
    let odd = sandbox.write(
        "odd.json",
        r#"{"mcpServers": {"linear": {"type": "http", "url": "https://linear.example/mcp"},
            "we[1]": {"type": "http", "url": "https://x.example/mcp"}}}"#,
    );
    let out = sandbox.run(&["status", "--catalog", odd.to_str().unwrap()]);
    let text = stdout(&out);
    assert!(text.contains("Run `patchbay authorize linear`."), "{text}");
    assert!(text.contains("Run `patchbay authorize 'we[1]'`."), "{text}");
}

#[test]
fn a_catalog_that_is_not_json_names_the_file_line_and_column() {
    let sandbox = Sandbox::new(false);
    let bad = sandbox.write(
        "bad.json",
        "{\n  \"mcpServers\": {\n    \"x\": { \"type\": \"stdio\" \n  }\n",
    );
    let out = sandbox.run(&["status", "--json", "--catalog", bad.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "an unreadable catalog is an error"
    );
    let report = json(&out);
    let error = report["catalog"]["sources"][0]["error"].as_str().unwrap();
    assert!(error.contains("bad.json"), "{error}");
    assert!(error.contains("not valid JSON"), "{error}");
    assert!(
        stdout(&sandbox.run(&["status", "--catalog", bad.to_str().unwrap()]))
            .contains("catalog error:")
    );
}

#[test]
fn a_missing_catalog_file_is_an_error_not_an_empty_list() {
    let sandbox = Sandbox::new(false);
    let out = sandbox.run(&["status", "--json", "--catalog", "/nonexistent/catalog.json"]);
    assert_eq!(out.status.code(), Some(2));
    let report = json(&out);
    assert!(report["catalog"]["sources"][0]["error"]
        .as_str()
        .unwrap()
        .contains("/nonexistent/catalog.json"));
}

#[test]
fn offered_lists_startable_servers_then_a_compact_unavailable_roster() {
    let sandbox = Sandbox::new(false);
    let catalog = sandbox.fixture("mixed.json");
    let out = sandbox.run(&["offered", "--catalog", catalog.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let text = stdout(&out);
    let (offered, roster) = text.split_once("\nUnavailable:\n").expect("a roster");
    assert!(offered.contains("- everything"), "{text}");
    assert!(!offered.contains("notion"), "{text}");
    assert!(roster.contains("- notion: needs authorization"), "{text}");
    assert!(
        roster.contains("- github: missing configuration (GITHUB_TOKEN)"),
        "{text}"
    );
    assert!(
        roster.contains("- strad: The endpoint accepts only static bearer tokens"),
        "{text}"
    );
    for line in roster.lines() {
        assert!(line.chars().count() <= 140, "roster line too long: {line}");
    }

    let out = sandbox.run(&["offered", "--json", "--catalog", catalog.to_str().unwrap()]);
    let offered = json(&out);
    let names: Vec<&str> = offered["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["blank-unavailable", "everything"]);
}

#[test]
fn the_data_directory_comes_from_the_flag_or_the_environment() {
    let sandbox = Sandbox::new(false);
    let catalog = sandbox.fixture("all-ready.json");
    let elsewhere = tempfile::tempdir().unwrap();
    let out = sandbox
        .command()
        .args([
            "--data-dir",
            elsewhere.path().to_str().unwrap(),
            "status",
            "--catalog",
        ])
        .arg(&catalog)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert!(elsewhere.path().join("patchbay.sqlite3").is_file());
    assert!(!sandbox.path().join("patchbay.sqlite3").exists());

    let out = sandbox.run(&["paths"]);
    let text = stdout(&out);
    assert!(
        text.contains(&sandbox.path().join("mcp.json").display().to_string()),
        "{text}"
    );
}

#[test]
fn bad_arguments_exit_with_two() {
    let sandbox = Sandbox::new(false);
    let out = sandbox.run(&["status", "--no-such-flag"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn secret_set_reads_stdin_stores_in_the_keychain_and_resolves_the_variable() {
    require_keychain!();
    let sandbox = Sandbox::new(true);
    let catalog = sandbox.fixture("mixed.json");
    let out = sandbox.run_with_stdin(&["secret", "set", "GITHUB_TOKEN"], "ghp_secret_value_123\n");
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    assert!(!stdout(&out).contains("ghp_secret_value_123"));

    let list = sandbox.run(&["secret", "list"]);
    let text = stdout(&list);
    assert!(text.contains("GITHUB_TOKEN"), "{text}");
    assert!(
        !text.contains("ghp_secret_value_123"),
        "secret list printed a value"
    );

    let report = json(&sandbox.run(&["status", "--json", "--catalog", catalog.to_str().unwrap()]));
    assert_eq!(state_of(&report, "github"), "ready");

    // The database holds no plaintext secret.
    let db = std::fs::read(sandbox.path().join("patchbay.sqlite3")).unwrap();
    assert!(!String::from_utf8_lossy(&db).contains("ghp_secret_value_123"));

    // An empty value is refused and nothing is stored.
    let out = sandbox.run_with_stdin(&["secret", "set", "EMPTY"], "\n");
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("empty"));
    assert!(!stdout(&sandbox.run(&["secret", "list"])).contains("EMPTY"));

    let out = sandbox.run(&["secret", "delete", "GITHUB_TOKEN"]);
    assert!(out.status.success());
    let status = sandbox.run(&["status", "--json", "--catalog", catalog.to_str().unwrap()]);
    assert_eq!(state_of(&json(&status), "github"), "missing_configuration");
    SecretScan::new(sandbox.path())
        .secret(
            "the GITHUB_TOKEN value set on stdin",
            "ghp_secret_value_123",
        )
        .output("patchbay secret list", &list)
        .output("patchbay secret delete", &out)
        .output("patchbay status", &status)
        .assert_clean();
}

#[test]
fn a_keychain_that_does_not_answer_is_unreachable_never_missing_and_deletes_nothing() {
    require_keychain!();
    let sandbox = Sandbox::new(true);
    let catalog = sandbox.fixture("mixed.json");
    let out = sandbox.run_with_stdin(&["secret", "set", "GITHUB_TOKEN"], "ghp_value");
    assert!(out.status.success(), "stderr: {}", stderr(&out));

    let locked = Sandbox {
        dir: tempfile::tempdir().unwrap(),
        keychain: false,
    };
    // Same data directory, but a D-Bus address that leads nowhere.
    let out = locked
        .command()
        .env("PATCHBAY_DATA_DIR", sandbox.path())
        .args(["status", "--json", "--catalog", catalog.to_str().unwrap()])
        .output()
        .unwrap();
    let report = json(&out);
    assert_eq!(state_of(&report, "github"), "secret_store_unreachable");
    assert_eq!(report["secret_store"]["reachable"], false);
    // Connectors that need nothing from the vault are unaffected.
    assert_eq!(state_of(&report, "notion"), "needs_authorization");

    // Back with the keychain: the secret is still there.
    let status = sandbox.run(&["status", "--json", "--catalog", catalog.to_str().unwrap()]);
    assert_eq!(state_of(&json(&status), "github"), "ready");
    SecretScan::new(sandbox.path())
        .secret("the GITHUB_TOKEN value set on stdin", "ghp_value")
        .output("patchbay status, keychain unreachable", &out)
        .output("patchbay status", &status)
        .assert_clean();
}

fn row(key: &CredentialKey, expires_in: Option<Duration>, one_shot: bool) -> CredentialRow {
    CredentialRow {
        credential_key: key.clone(),
        server_name: key.server_name().to_owned(),
        server_url: None,
        expires_at: expires_in.map(|d| Utc::now() + d),
        has_refresh_token: false,
        one_shot,
        issuer: Some("http://127.0.0.1:9000/".into()),
        client_id: Some("client-1".into()),
        scope: None,
        updated_at: Utc::now(),
        rotated_by: None,
        rotated_at: None,
    }
}

#[test]
fn stored_credentials_drive_ready_expired_reauth_one_shot_and_unclaimed() {
    require_keychain!();
    let sandbox = Sandbox::new(true);
    let catalog = sandbox.fixture("oauth.json");
    let core = sandbox.core(Some(catalog.clone()));
    let key_of = |name: &str| {
        let report = core.status();
        assert_eq!(report.connector(name).unwrap().label, "Needs authorization");
        patchbay_catalog_key(&core, name)
    };
    let with_refresh = TokenSet {
        access_token: Secret::new("at-1"),
        refresh_token: Some(Secret::new("rt-1")),
    };
    let access_only = TokenSet {
        access_token: Secret::new("at-2"),
        refresh_token: None,
    };
    let vault = core.vault();
    vault
        .put_credential(
            &row(&key_of("fresh"), Some(Duration::hours(1)), false),
            &with_refresh,
        )
        .unwrap();
    vault
        .put_credential(
            &row(&key_of("lapsed"), Some(Duration::hours(-1)), false),
            &with_refresh,
        )
        .unwrap();
    vault
        .put_credential(
            &row(&key_of("dead"), Some(Duration::hours(-1)), true),
            &access_only,
        )
        .unwrap();
    vault
        .put_credential(
            &row(&key_of("oneshot"), Some(Duration::hours(1)), true),
            &access_only,
        )
        .unwrap();
    let stale = CredentialKey("fresh|0000000000000000".into());
    vault
        .put_credential(&row(&stale, Some(Duration::hours(1)), false), &with_refresh)
        .unwrap();
    let gone = CredentialKey("retired|0123456789abcdef".into());
    vault
        .put_credential(&row(&gone, Some(Duration::hours(1)), false), &with_refresh)
        .unwrap();
    drop(core);

    let out = sandbox.run(&["status", "--json", "--catalog", catalog.to_str().unwrap()]);
    let report = json(&out);
    assert_eq!(state_of(&report, "fresh"), "ready");
    assert_eq!(state_of(&report, "lapsed"), "token_expired");
    assert_eq!(state_of(&report, "dead"), "needs_reauth");
    assert_eq!(state_of(&report, "oneshot"), "ready");
    // A key whose ${VAR} is unresolved is missing configuration, not needs authorization.
    assert_eq!(state_of(&report, "keyed"), "missing_configuration");

    let rows = report["connectors"].as_array().unwrap();
    let find = |n: &str| rows.iter().find(|r| r["name"] == n).unwrap();
    assert_eq!(find("oneshot")["one_shot"], true);
    assert!(find("oneshot")["one_shot_note"]
        .as_str()
        .unwrap()
        .contains("no refresh token"));
    assert_eq!(
        find("dead")["one_shot"],
        true,
        "the one-shot note shows in every state"
    );
    assert_eq!(find("fresh")["one_shot"], false);
    assert_eq!(find("dead")["action"], "reauthorize");
    assert!(
        find("lapsed")["action"].is_null(),
        "token_expired needs no button"
    );
    assert!(
        !out.stdout.windows(4).any(|w| w == b"at-1" || w == b"rt-1"),
        "a token reached the output"
    );

    let unclaimed: Vec<&str> = report["unclaimed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["credential_key"].as_str().unwrap())
        .collect();
    assert_eq!(
        unclaimed,
        vec!["fresh|0000000000000000", "retired|0123456789abcdef"]
    );

    // A claimed credential cannot be deleted as unclaimed.
    let fresh_key = find("fresh")["credential"]["key"]
        .as_str()
        .unwrap()
        .to_owned();
    let out = sandbox.run(&[
        "unclaimed",
        "delete",
        &fresh_key,
        "--catalog",
        catalog.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("belongs to the connector \"fresh\""),
        "{}",
        stderr(&out)
    );

    let out = sandbox.run(&[
        "unclaimed",
        "delete",
        "retired|0123456789abcdef",
        "--catalog",
        catalog.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let report = json(&sandbox.run(&["status", "--json", "--catalog", catalog.to_str().unwrap()]));
    assert_eq!(report["unclaimed"].as_array().unwrap().len(), 1);
    assert_eq!(state_of(&report, "fresh"), "ready");
}

fn patchbay_catalog_key(core: &patchbay_core::Patchbay, name: &str) -> CredentialKey {
    let catalog = core.catalog();
    let Some(patchbay_catalog::CatalogItem::Server(entry)) = catalog.get(name) else {
        panic!("{name} is not a valid entry");
    };
    entry
        .credential_key(&|_| None)
        .expect("no variables")
        .expect("remote")
}

// ---- Failure states say the truth (issue 10) ----

const UNAVAILABLE_ONLY: &str = r#"{"mcpServers": {
    "strad": {"type": "streamable-http", "url": "https://strad.example/mcp",
              "unavailable": "Accepts only static bearer tokens."}
}}"#;

#[test]
fn check_with_nothing_checked_exits_non_zero_and_says_why() {
    let sandbox = Sandbox::new(false);
    let catalog = sandbox.write("unavailable.json", UNAVAILABLE_ONLY);
    let out = sandbox.run(&["check", "--catalog", catalog.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "stdout: {}", stdout(&out));
    let err = stderr(&out);
    assert!(err.contains("nothing was checked"), "{err}");
    assert!(err.contains("strad: declared unavailable"), "{err}");
    // The vault's state is said once when it cannot be read (no keychain here).
    assert_eq!(err.matches("the vault cannot be read").count(), 1, "{err}");

    let empty = sandbox.write("empty.json", r#"{"mcpServers": {}}"#);
    let out = sandbox.run(&["check", "--json", "--catalog", empty.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("no connector is in use and the catalog offers none"),
        "{err}"
    );

    // A fresh home: the shipped gallery is not the user's, and the way to use one is said.
    let out = sandbox.run(&["check"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.starts_with(
            "error: nothing was checked: no connector is in use; `patchbay gallery` lists the "
        ),
        "{err}"
    );
    assert!(
        err.contains("`patchbay enable NAME` puts one in use"),
        "{err}"
    );
}

#[test]
fn check_with_every_credential_unreadable_is_not_a_pass() {
    require_keychain!();
    let sandbox = Sandbox::new(true);
    let catalog = sandbox.write(
        "one.json",
        r#"{"mcpServers": {"notion": {"type": "streamable-http", "url": "http://127.0.0.1:9/mcp"}}}"#,
    );
    seed_credential(&sandbox, &catalog, "notion");
    // The same data directory, with a keychain that does not answer.
    let locked = Sandbox {
        dir: tempfile::tempdir().unwrap(),
        keychain: false,
    };
    let out = locked
        .command()
        .env("PATCHBAY_DATA_DIR", sandbox.path())
        .args(["check", "--catalog", catalog.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "stdout: {}", stdout(&out));
    let err = stderr(&out);
    assert!(err.contains("nothing was checked"), "{err}");
    assert!(err.contains("the vault cannot be read"), "{err}");
    SecretScan::new(sandbox.path())
        .secret("the seeded access token", SEEDED_ACCESS)
        .secret("the seeded refresh token", SEEDED_REFRESH)
        .output("patchbay check", &out)
        .assert_clean();
}

#[test]
fn an_unreadable_catalog_makes_status_check_and_offered_exit_two() {
    let sandbox = Sandbox::new(false);
    let bad = sandbox.write("bad.json", "{\"mcpServers\": {");
    let missing = sandbox.path().join("no-such-catalog.json");
    for catalog in [bad.to_str().unwrap(), missing.to_str().unwrap()] {
        for args in [
            vec!["status"],
            vec!["status", "--json"],
            vec!["offered"],
            vec!["offered", "--json"],
            vec!["check"],
            vec!["check", "--json"],
        ] {
            let mut full = args.clone();
            full.extend(["--catalog", catalog]);
            let out = sandbox.run(&full);
            assert_eq!(out.status.code(), Some(2), "{full:?}: {}", stdout(&out));
            let err = stderr(&out);
            assert!(err.contains(catalog), "{full:?}: {err}");
            assert!(
                !stdout(&out).contains("(none)"),
                "{full:?}: {}",
                stdout(&out)
            );
        }
    }

    // A catalog its reader may not open (as `nobody` when the tests run as root, where
    // permission bits stop nothing).
    use std::os::unix::fs::PermissionsExt;
    let locked = sandbox.write("locked.json", "{\"mcpServers\": {}}");
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
    std::fs::set_permissions(sandbox.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let data = sandbox.path().join("unused-data");
    for command in ["status", "offered", "check"] {
        let out = run_unprivileged(
            &sandbox,
            &data,
            &[command, "--catalog", locked.to_str().unwrap()],
        );
        assert_eq!(out.status.code(), Some(2), "{command}: {}", stdout(&out));
        let err = stderr(&out);
        assert!(err.contains("locked.json"), "{command}: {err}");
        assert!(
            !stdout(&out).contains("(none)"),
            "{command}: {}",
            stdout(&out)
        );
    }
}

/// Store a credential for `name` the way authorize would (the real keychain).
fn seed_credential(sandbox: &Sandbox, catalog: &std::path::Path, name: &str) {
    let core = sandbox.core(Some(catalog.to_path_buf()));
    let key = patchbay_catalog_key(&core, name);
    core.vault()
        .put_credential(
            &row(&key, Some(Duration::hours(1)), false),
            &TokenSet {
                access_token: Secret::new(SEEDED_ACCESS),
                refresh_token: Some(Secret::new(SEEDED_REFRESH)),
            },
        )
        .unwrap();
}

/// The tokens [`seed_credential`] stores, for the secret scan.
const SEEDED_ACCESS: &str = "at-sealed-0c1d";
const SEEDED_REFRESH: &str = "rt-sealed-9f2e";

const TWO_OAUTH: &str = r#"{"mcpServers": {
    "notion": {"type": "streamable-http", "url": "https://mcp.notion.example/mcp"},
    "linear": {"type": "streamable-http", "url": "https://mcp.linear.example/mcp"},
    "time": {"type": "stdio", "command": "uvx", "args": ["mcp-server-time"]}
}}"#;

#[test]
fn offered_never_offers_a_connector_whose_secret_cannot_be_unsealed() {
    require_keychain!();
    let sandbox = Sandbox::new(true);
    let catalog = sandbox.write("two.json", TWO_OAUTH);
    seed_credential(&sandbox, &catalog, "notion");
    seed_credential(&sandbox, &catalog, "linear");
    let offered = |sandbox: &Sandbox, data: &std::path::Path| {
        sandbox
            .command()
            .env("PATCHBAY_DATA_DIR", data)
            .args(["offered", "--catalog", catalog.to_str().unwrap()])
            .output()
            .unwrap()
    };
    let out = offered(&sandbox, sandbox.path());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("- notion ("), "{}", stdout(&out));

    // A keychain that does not answer.
    let locked = Sandbox {
        dir: tempfile::tempdir().unwrap(),
        keychain: false,
    };
    let text = stdout(&offered(&locked, sandbox.path()));
    let (servers, roster) = text.split_once("\nUnavailable:\n").expect(&text);
    assert!(servers.contains("- time"), "{text}");
    assert!(
        !servers.contains("notion") && !servers.contains("linear"),
        "{text}"
    );
    assert!(
        roster.contains("- notion: its stored secret cannot be unsealed"),
        "{text}"
    );
    assert_eq!(roster.matches("did not answer").count(), 1, "{text}");

    // A keychain that answers but holds no key for this vault (the database moved to another
    // data directory, whose keychain account differs): said as exactly that, once.
    let moved = tempfile::tempdir().unwrap();
    std::fs::copy(
        sandbox.path().join("patchbay.sqlite3"),
        moved.path().join("patchbay.sqlite3"),
    )
    .unwrap();
    let out = offered(&sandbox, moved.path());
    let text = stdout(&out);
    let (servers, roster) = text.split_once("\nUnavailable:\n").expect(&text);
    assert!(
        !servers.contains("notion") && !servers.contains("linear"),
        "{text}"
    );
    assert_eq!(
        roster.matches("is missing from the OS keychain").count(),
        1,
        "{text}"
    );
    assert!(!roster.contains("did not answer"), "{text}");
    assert!(
        roster.contains("- linear: its stored secret cannot be unsealed"),
        "{text}"
    );
    let json = json(
        &sandbox
            .command()
            .env("PATCHBAY_DATA_DIR", moved.path())
            .args(["offered", "--json", "--catalog", catalog.to_str().unwrap()])
            .output()
            .unwrap(),
    );
    assert!(json["vault"]
        .as_str()
        .unwrap()
        .contains("is missing from the OS keychain"));
    let status = sandbox
        .command()
        .env("PATCHBAY_DATA_DIR", moved.path())
        .args(["status", "--json", "--catalog", catalog.to_str().unwrap()])
        .output()
        .unwrap();
    let report = patchbay_e2e::json(&status);
    assert_eq!(report["secret_store"]["key_unusable"], true);
    let notion_detail = report["connectors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "notion")
        .unwrap()["detail"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(!notion_detail.contains("did not answer"), "{notion_detail}");
    for dir in [sandbox.path(), moved.path()] {
        SecretScan::new(dir)
            .secret("the seeded access token", SEEDED_ACCESS)
            .secret("the seeded refresh token", SEEDED_REFRESH)
            .output("patchbay offered", &out)
            .output("patchbay status", &status)
            .assert_clean();
    }
}

/// Run the CLI as a user who cannot write `dir` (tests run as root in CI containers, where
/// permission bits stop nothing): as `nobody` via setpriv when root, else as ourselves.
fn run_unprivileged(
    sandbox: &Sandbox,
    dir: &std::path::Path,
    args: &[&str],
) -> std::process::Output {
    let root = std::process::Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false);
    let mut cmd = sandbox.command();
    if root {
        let program = cmd.get_program().to_owned();
        let mut wrapped = std::process::Command::new("setpriv");
        wrapped.args(["--reuid=65534", "--regid=65534", "--clear-groups"]);
        wrapped.arg(program);
        for (k, v) in cmd.get_envs() {
            match v {
                Some(v) => wrapped.env(k, v),
                None => wrapped.env_remove(k),
            };
        }
        cmd = wrapped;
    }
    cmd.env("PATCHBAY_DATA_DIR", dir)
        .env("HOME", dir)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run patchbay")
}

#[test]
fn status_reads_a_data_directory_that_cannot_be_written() {
    use std::os::unix::fs::PermissionsExt;
    let sandbox = Sandbox::new(false);
    let catalog = sandbox.fixture("all-ready.json");
    let data = sandbox.path().join("data");
    let out = sandbox
        .command()
        .env("PATCHBAY_DATA_DIR", &data)
        .args(["status", "--catalog", catalog.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let db = data.join("patchbay.sqlite3");
    // Readable by the unprivileged user, writable by nobody.
    for p in [sandbox.path(), data.as_path(), catalog.as_path()] {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let chown = std::process::Command::new("chown")
        .args(["-R", "65534"])
        .arg(&data)
        .status();
    let _ = chown;
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o400)).unwrap();
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o555)).unwrap();
    let before = std::fs::metadata(&db).unwrap();

    let out = run_unprivileged(
        &sandbox,
        &data,
        &["status", "--catalog", catalog.to_str().unwrap()],
    );
    let text = stdout(&out);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout: {text} stderr: {}",
        stderr(&out)
    );
    assert!(text.starts_with("All 2 connectors are fine"), "{text}");
    let out = run_unprivileged(
        &sandbox,
        &data,
        &["offered", "--catalog", catalog.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("- time"), "{}", stdout(&out));

    let after = std::fs::metadata(&db).unwrap();
    assert_eq!(before.len(), after.len());
    assert_eq!(before.modified().unwrap(), after.modified().unwrap());
    assert_eq!(before.permissions().mode(), after.permissions().mode());
    for side in [
        "patchbay.sqlite3-wal",
        "patchbay.sqlite3-shm",
        "patchbay.sqlite3-journal",
    ] {
        assert!(!data.join(side).exists(), "{side} was created");
    }
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn an_emptied_or_corrupt_database_is_said_and_left_alone() {
    let sandbox = Sandbox::new(false);
    let catalog = sandbox.fixture("all-ready.json");
    let db = sandbox.path().join("patchbay.sqlite3");
    let garbage: Vec<u8> = (0..4096u32).map(|i| (i * 7 % 251) as u8).collect();
    for (content, said) in [(Vec::new(), "is empty"), (garbage, "is corrupt")] {
        std::fs::write(&db, &content).unwrap();
        for args in [vec!["status"], vec!["status", "--json"], vec!["offered"]] {
            let mut full = args.clone();
            full.extend(["--catalog", catalog.to_str().unwrap()]);
            let out = sandbox.run(&full);
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(2), "{full:?}: {}", stdout(&out));
            assert!(err.contains(said), "{err}");
            assert!(err.contains(&db.display().to_string()), "{err}");
            assert_eq!(std::fs::read(&db).unwrap(), content, "the file was changed");
        }
    }
}

#[test]
fn a_degraded_connector_counts_in_status() {
    let sandbox = Sandbox::new(false);
    let catalog = sandbox.write(
        "gone.json",
        r#"{"mcpServers": {
            "gone": {"type": "stdio", "command": "/nonexistent/patchbay-test-server"},
            "time": {"type": "stdio", "command": "uvx", "args": ["mcp-server-time"]}
        }}"#,
    );
    let out = sandbox.run(&["status", "--json", "--catalog", catalog.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // A command that does not exist is degraded at once.
    let out = sandbox.run(&["check", "gone", "--catalog", catalog.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));

    let out = sandbox.run(&["status", "--json", "--catalog", catalog.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "a degraded connector needs attention"
    );
    let report = json(&out);
    assert_eq!(report["degraded"], 1);
    assert_eq!(report["need_attention"], 1);
    let rows = report["connectors"].as_array().unwrap();
    assert_eq!(rows[0]["name"], "gone", "problems first");
    assert_eq!(rows[0]["needs_attention"], true);
    assert!(!rows[0]["degraded"]["error"].as_str().unwrap().is_empty());
    assert!(rows[1]["degraded"].is_null());

    let out = sandbox.run(&["status", "--catalog", catalog.to_str().unwrap()]);
    let text = stdout(&out);
    assert!(text.starts_with("1 needs attention (1 degraded)"), "{text}");
    let line = text.lines().find(|l| l.contains("gone")).unwrap();
    assert!(
        line.starts_with("!!") && line.contains("degraded"),
        "{line}"
    );

    let offered =
        json(&sandbox.run(&["offered", "--json", "--catalog", catalog.to_str().unwrap()]));
    assert_eq!(offered["unavailable"][0]["name"], "gone");
    assert_eq!(offered["unavailable"][0]["degraded"], true);
}

#[test]
fn control_characters_from_data_never_reach_the_terminal_raw() {
    let sandbox = Sandbox::new(false);
    let catalog = sandbox.write(
        "ctl.json",
        r#"{"mcpServers": {
            "plain": {"type": "stdio", "command": "/nonexistent/x\u001b[31m\u0007",
                      "title": "Red \u001b[31mtitle\u0007\u009b2J", "description": "d\u001b]0;pwned\u0007"},
            "na\u001b[31mme\u0007": {"type": "stdio", "command": "node"},
            "gone": {"type": "streamable-http", "url": "https://x.example/mcp",
                     "unavailable": "Broken \u001b[2J\u0007 here."}
        }}"#,
    );
    let c = catalog.to_str().unwrap();
    for args in [
        vec!["status", "--catalog", c],
        vec!["status", "--json", "--catalog", c],
        vec!["offered", "--catalog", c],
        vec!["offered", "--json", "--catalog", c],
        vec!["check", "--catalog", c],
        vec!["check", "plain", "--catalog", c],
        vec!["check", "na\u{1b}[31mme\u{7}", "--catalog", c],
        vec!["history", "na\u{1b}[31mme\u{7}", "--catalog", c],
    ] {
        let out = sandbox.run(&args);
        for (what, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
            let text = String::from_utf8_lossy(bytes);
            assert!(
                !text
                    .chars()
                    .any(|ch| (ch.is_control() && ch != '\n') || ch == '\u{7f}'),
                "{args:?} {what} carries a raw control character: {text:?}"
            );
        }
    }
    let text = stdout(&sandbox.run(&["offered", "--catalog", c]));
    assert!(text.contains("\\u{1b}"), "escaped, not dropped: {text}");
}

/// A small tmpfs mounted for one test, unmounted on drop; `None` where mounting is not allowed.
struct SmallDisk(std::path::PathBuf);

impl SmallDisk {
    fn mount(at: std::path::PathBuf, size: &str) -> Option<SmallDisk> {
        std::fs::create_dir_all(&at).ok()?;
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&at)
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        ok.then_some(SmallDisk(at))
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn status_reads_a_database_on_a_full_disk() {
    let sandbox = Sandbox::new(false);
    let catalog = sandbox.fixture("all-ready.json");
    let made = sandbox.path().join("made");
    let out = sandbox
        .command()
        .env("PATCHBAY_DATA_DIR", &made)
        .args(["status", "--catalog", catalog.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let Some(disk) = SmallDisk::mount(sandbox.path().join("full"), "256k") else {
        patchbay_e2e::skip_or_fail("mounting a tmpfs is not allowed here");
        return;
    };
    let db = disk.0.join("patchbay.sqlite3");
    std::fs::copy(made.join("patchbay.sqlite3"), &db).unwrap();
    // Fill the disk to the last block.
    let mut filler = std::fs::File::create(disk.0.join("filler")).unwrap();
    let block = vec![0u8; 4096];
    while std::io::Write::write_all(&mut filler, &block).is_ok() {}
    drop(filler);
    let before = std::fs::read(&db).unwrap();

    let out = sandbox
        .command()
        .env("PATCHBAY_DATA_DIR", &disk.0)
        .args(["status", "--catalog", catalog.to_str().unwrap()])
        .output()
        .unwrap();
    let text = stdout(&out);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout: {text} stderr: {}",
        stderr(&out)
    );
    assert!(text.starts_with("All 2 connectors are fine"), "{text}");
    assert_eq!(
        std::fs::read(&db).unwrap(),
        before,
        "the database was changed"
    );
}

/// Issue 21: a mistyped or mis-cased connector name gets a "did you mean" from the catalog.
#[test]
fn a_near_miss_of_a_connector_name_gets_a_did_you_mean() {
    let sandbox = Sandbox::new(false);
    for (args, near) in [
        (&["authorize", "notoin"][..], "notion"),
        (&["enable", "Notoin"][..], "notion"),
        (&["check", "linaer"][..], "linear"),
        (&["history", "notoin"][..], "notion"),
    ] {
        let out = sandbox.run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stdout(&out));
        let err = stderr(&out);
        assert!(
            err.contains(&format!("did you mean \"{near}\"?")),
            "{args:?}: {err}"
        );
    }
    let out = sandbox.run(&["check", "no-such-server-at-all"]);
    assert!(!stderr(&out).contains("did you mean"), "{}", stderr(&out));
}

/// Issue 21: a name typed in another case is the connector it names, when only one matches.
#[test]
fn a_connector_name_in_another_case_is_that_connector() {
    let sandbox = Sandbox::new(false);
    let out = sandbox.run(&["enable", "NOTION"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("notion is in use"),
        "{}",
        stdout(&out)
    );
    let out = sandbox.run(&["history", "Notion"]);
    let err = stderr(&out);
    assert!(
        err.contains("no stored credential for the connector notion"),
        "{err}"
    );
    let out = sandbox.run(&["disable", "notion"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    // Two connectors told apart only by case: each by its own name, neither by a third case.
    let catalog = sandbox.write(
        "cased.json",
        r#"{"mcpServers": {"gh": {"type": "http", "url": "https://a.example/mcp"},
            "GH": {"type": "http", "url": "https://b.example/mcp"}}}"#,
    );
    let c = catalog.to_str().unwrap();
    let out = sandbox.run(&["history", "GH", "--catalog", c]);
    assert!(
        stderr(&out).contains("the connector GH"),
        "{}",
        stderr(&out)
    );
    let out = sandbox.run(&["history", "Gh", "--catalog", c]);
    assert!(
        stderr(&out).contains("no connector named \"Gh\""),
        "{}",
        stderr(&out)
    );
}

/// Issue 21: `add-custom` puts a server the catalog lacks in use, its secret (read from stdin,
/// never from the command line) in the vault only; a bad URL or a taken name says which field is
/// wrong and writes nothing.
#[test]
fn add_custom_puts_a_server_in_use_with_its_secret_in_the_vault() {
    require_keychain!();
    let sandbox = Sandbox::new(true);
    let out = sandbox.run_with_stdin(
        &[
            "add-custom",
            "postgres",
            "--command",
            "npx",
            "--arg",
            "-y",
            "--arg",
            "@modelcontextprotocol/server-postgres",
            "--secret",
            "DATABASE_URL",
            "--set",
            "LOG=info",
        ],
        "postgres://me:pw-8812@db/app\n",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("In the vault: POSTGRES_DATABASE_URL."),
        "{}",
        stdout(&out)
    );
    let report = json(&sandbox.run(&["status", "--json"]));
    assert_eq!(state_of(&report, "postgres"), "ready");

    let bad = sandbox.run(&["add-custom", "web", "--url", "http://mcp.example.com/mcp"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        stderr(&bad).contains("url: use https://"),
        "{}",
        stderr(&bad)
    );
    let taken = sandbox.run(&[
        "add-custom",
        "notion",
        "--url",
        "https://mcp.example.com/mcp",
    ]);
    assert_eq!(taken.status.code(), Some(2));
    assert!(
        stderr(&taken).contains("a connector named \"notion\" exists"),
        "{}",
        stderr(&taken)
    );
    let report = json(&sandbox.run(&["status", "--json"]));
    assert!(report["connectors"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["name"] != "web"));
    SecretScan::new(sandbox.path())
        .secret(
            "the DATABASE_URL typed on stdin",
            "postgres://me:pw-8812@db/app",
        )
        .output("patchbay add-custom", &out)
        .assert_clean();
}
