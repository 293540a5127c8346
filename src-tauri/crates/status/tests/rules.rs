//! Every state and transition rule of the status computation, with hand-built local signals and
//! an injected clock.

use chrono::{DateTime, Duration, TimeZone, Utc};
use indexmap::IndexMap;
use patchbay_catalog::{
    Catalog, CatalogItem, CredentialKey, EntryError, InvalidEntry, OAuthConfig, ServerEntry,
    ServerName, Transport,
};
use patchbay_status::{
    compute, ConnectorState, LocalSignals, Offered, StatusReport, StoreHealth, VaultVariables,
};
use patchbay_vault::{CredentialRow, Secret};
use std::collections::HashMap;
use std::path::PathBuf;

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 30, 12, 0, 0).unwrap()
}

fn http(name: &str, url: &str, headers: &[(&str, &str)]) -> ServerEntry {
    ServerEntry {
        name: ServerName(name.into()),
        title: None,
        description: None,
        transport: Transport::StreamableHttp {
            url: url.into(),
            headers: headers
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<IndexMap<_, _>>(),
        },
        oauth: None,
        unavailable: None,
        enabled: None,
        timeout_ms: None,
        retry: None,
        source: PathBuf::from("/catalog/mcp.json"),
    }
}

fn stdio(name: &str, env: &[(&str, &str)]) -> ServerEntry {
    ServerEntry {
        name: ServerName(name.into()),
        title: Some(format!("{name} title")),
        description: None,
        transport: Transport::Stdio {
            command: "npx".into(),
            args: vec!["-y".into(), "some-server".into()],
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        },
        oauth: None,
        unavailable: None,
        enabled: None,
        timeout_ms: None,
        retry: None,
        source: PathBuf::from("/catalog/mcp.json"),
    }
}

fn catalog(entries: Vec<ServerEntry>) -> Catalog {
    Catalog {
        items: entries.into_iter().map(CatalogItem::Server).collect(),
        sources: Vec::new(),
    }
}

fn signals() -> LocalSignals {
    LocalSignals {
        credentials: Vec::new(),
        store: StoreHealth::Reachable,
        variables: VaultVariables::default(),
        env: HashMap::new(),
        now: now(),
        wanted_scopes: Default::default(),
    }
}

fn key_of(entry: &ServerEntry, signals: &LocalSignals) -> CredentialKey {
    let lookup = |name: &str| {
        signals
            .variables
            .values
            .get(name)
            .map(|s| s.expose().to_owned())
            .or_else(|| signals.env.get(name).cloned())
    };
    entry.credential_key(&lookup).unwrap().unwrap()
}

fn credential(
    key: CredentialKey,
    expires_at: Option<DateTime<Utc>>,
    refresh: bool,
    one_shot: bool,
) -> CredentialRow {
    CredentialRow {
        server_name: key.server_name().to_owned(),
        credential_key: key,
        server_url: None,
        expires_at,
        has_refresh_token: refresh,
        one_shot,
        issuer: None,
        client_id: None,
        scope: None,
        updated_at: now() - Duration::days(1),
        rotated_by: None,
        rotated_at: None,
    }
}

fn state(report: &StatusReport, name: &str) -> ConnectorState {
    report
        .connector(name)
        .unwrap_or_else(|| panic!("{name}"))
        .state
}

#[test]
fn an_oauth_capable_server_without_a_credential_needs_authorization() {
    let report = compute(
        &catalog(vec![http("notion", "https://mcp.notion.com/mcp", &[])]),
        &signals(),
    );
    assert_eq!(state(&report, "notion"), ConnectorState::NeedsAuthorization);
    assert_eq!(report.need_attention, 1);
    assert_eq!(report.worst, Some(ConnectorState::NeedsAuthorization));
}

#[test]
fn credential_expiry_drives_ready_expired_and_reauth() {
    let entry = http("notion", "https://mcp.notion.com/mcp", &[]);
    let mut s = signals();
    let key = key_of(&entry, &s);
    let cat = catalog(vec![entry]);

    for (expires_at, refresh, expected) in [
        (
            Some(now() + Duration::minutes(5)),
            true,
            ConnectorState::Ready,
        ),
        (
            Some(now() + Duration::minutes(5)),
            false,
            ConnectorState::Ready,
        ),
        (None, false, ConnectorState::Ready),
        // Expiry is inclusive: a token that expires now is expired.
        (Some(now()), true, ConnectorState::TokenExpired),
        (
            Some(now() - Duration::hours(2)),
            true,
            ConnectorState::TokenExpired,
        ),
        (Some(now()), false, ConnectorState::NeedsReauth),
        (
            Some(now() - Duration::seconds(1)),
            false,
            ConnectorState::NeedsReauth,
        ),
    ] {
        s.credentials = vec![credential(key.clone(), expires_at, refresh, false)];
        assert_eq!(
            state(&compute(&cat, &s), "notion"),
            expected,
            "expires_at={expires_at:?} refresh={refresh}"
        );
    }
}

#[test]
fn the_clock_moves_a_credential_from_ready_to_expired() {
    let entry = http("notion", "https://mcp.notion.com/mcp", &[]);
    let mut s = signals();
    s.credentials = vec![credential(
        key_of(&entry, &s),
        Some(now() + Duration::minutes(30)),
        true,
        false,
    )];
    let cat = catalog(vec![entry]);
    assert_eq!(state(&compute(&cat, &s), "notion"), ConnectorState::Ready);
    s.now = now() + Duration::minutes(31);
    assert_eq!(
        state(&compute(&cat, &s), "notion"),
        ConnectorState::TokenExpired
    );
}

#[test]
fn the_one_shot_note_shows_in_every_state_until_a_refresh_token_arrives() {
    let entry = http("notion", "https://mcp.notion.com/mcp", &[]);
    let mut s = signals();
    let key = key_of(&entry, &s);
    let cat = catalog(vec![entry]);
    for expires_at in [now() + Duration::hours(1), now() - Duration::hours(1)] {
        s.credentials = vec![credential(key.clone(), Some(expires_at), false, true)];
        let report = compute(&cat, &s);
        let row = report.connector("notion").unwrap();
        assert!(row.one_shot, "{:?}", row.state);
        assert!(row
            .one_shot_note
            .as_deref()
            .unwrap()
            .contains("no refresh token"));
    }
    // The flag with a refresh token that arrived later: settled, no note.
    s.credentials = vec![credential(
        key,
        Some(now() + Duration::hours(1)),
        true,
        true,
    )];
    let report = compute(&cat, &s);
    assert!(!report.connector("notion").unwrap().one_shot);
    assert!(report.connector("notion").unwrap().one_shot_note.is_none());
}

#[test]
fn every_variable_a_connector_uses_says_where_its_value_comes_from() {
    use patchbay_status::{VariableSource, VariableStatus};
    let entry = http(
        "keyed",
        "https://x.example/${REGION:-eu}/mcp",
        &[
            ("Authorization", "Bearer ${API_KEY}"),
            ("X-Org", "${ORG}"),
            ("X-Again", "${API_KEY}"),
            ("X-Team", "${TEAM}"),
        ],
    );
    let cat = catalog(vec![entry]);
    let mut s = signals();
    s.variables.names.insert("API_KEY".into());
    s.variables
        .values
        .insert("API_KEY".into(), Secret::new("sk-live-1"));
    s.env.insert("ORG".into(), "acme".into());
    s.variables.names.insert("TEAM".into()); // stored, its key unreadable
    let report = compute(&cat, &s);
    let row = report.connector("keyed").unwrap();
    let sources: Vec<(&str, VariableSource)> = row
        .variables
        .iter()
        .map(|v: &VariableStatus| (v.name.as_str(), v.source))
        .collect();
    assert_eq!(
        sources,
        [
            ("REGION", VariableSource::Default),
            ("API_KEY", VariableSource::Vault),
            ("ORG", VariableSource::Environment),
            ("TEAM", VariableSource::Locked),
        ],
        "once each, in the order used"
    );
    let json = serde_json::to_string(&report).unwrap();
    assert!(
        !json.contains("sk-live-1") && !json.contains("acme"),
        "{json}"
    );

    s.env.clear();
    let report = compute(&cat, &s);
    let org = report.connector("keyed").unwrap().variables[2].clone();
    assert_eq!(
        (org.name.as_str(), org.source),
        ("ORG", VariableSource::Missing)
    );
    assert_eq!(org.field, "headers.X-Org");
}

#[test]
fn a_static_credential_header_server_is_never_offered_authorization() {
    let entry = http(
        "github",
        "https://api.githubcopilot.com/mcp/",
        &[("Authorization", "Bearer ${GITHUB_TOKEN}")],
    );
    let cat = catalog(vec![entry.clone()]);
    let mut s = signals();
    let report = compute(&cat, &s);
    assert_eq!(
        state(&report, "github"),
        ConnectorState::MissingConfiguration
    );
    let row = report.connector("github").unwrap();
    assert_eq!(row.missing_variables[0].name, "GITHUB_TOKEN");
    assert_eq!(row.missing_variables[0].field, "headers.Authorization");

    s.env.insert("GITHUB_TOKEN".into(), "ghp_x".into());
    let report = compute(&cat, &s);
    assert_eq!(state(&report, "github"), ConnectorState::Ready);
    assert!(!report.connector("github").unwrap().detail.contains("ghp_x"));

    // Even with the variable set and no stored credential, a header like X-API-Key means
    // no OAuth flow: Ready, never Needs authorization.
    let keyed = http(
        "keyed",
        "https://x.example/mcp",
        &[("X-API-Key", "literal")],
    );
    assert_eq!(
        state(&compute(&catalog(vec![keyed]), &signals()), "keyed"),
        ConnectorState::Ready
    );
}

#[test]
fn the_vault_wins_over_the_environment_and_a_default_is_never_missing() {
    let entry = stdio(
        "brave",
        &[
            ("BRAVE_API_KEY", "${BRAVE_API_KEY}"),
            ("LEVEL", "${LEVEL:-info}"),
        ],
    );
    let cat = catalog(vec![entry]);
    let mut s = signals();
    assert_eq!(
        state(&compute(&cat, &s), "brave"),
        ConnectorState::MissingConfiguration
    );
    s.variables.names.insert("BRAVE_API_KEY".into());
    s.variables
        .values
        .insert("BRAVE_API_KEY".into(), Secret::new("from-vault"));
    assert_eq!(state(&compute(&cat, &s), "brave"), ConnectorState::Ready);

    // The credential key is computed from the vault's value even when the environment has another.
    let entry = http(
        "tenant",
        "https://t.example/mcp",
        &[("X-Tenant", "${TENANT}")],
    );
    let mut s = signals();
    s.variables.names.insert("TENANT".into());
    s.variables
        .values
        .insert("TENANT".into(), Secret::new("vault-tenant"));
    s.env.insert("TENANT".into(), "env-tenant".into());
    let vault_key = key_of(&entry, &s);
    s.credentials = vec![credential(vault_key, None, true, false)];
    assert_eq!(
        state(&compute(&catalog(vec![entry]), &s), "tenant"),
        ConnectorState::Ready
    );
}

#[test]
fn an_unreachable_store_is_never_missing_and_only_affects_what_needs_it() {
    let uses_vault = stdio("brave", &[("BRAVE_API_KEY", "${BRAVE_API_KEY}")]);
    let missing = stdio("other", &[("OTHER_KEY", "${OTHER_KEY}")]);
    let plain = stdio("plain", &[]);
    let oauth = http("notion", "https://mcp.notion.com/mcp", &[]);
    let authorized = http("linear", "https://mcp.linear.app/mcp", &[]);
    let mut s = signals();
    let linear_key = key_of(&authorized, &s);
    s.credentials = vec![credential(
        linear_key,
        Some(now() + Duration::hours(1)),
        true,
        false,
    )];
    s.store = StoreHealth::Unreachable {
        message: "the OS keychain did not answer".into(),
    };
    // The vault's index says the variable exists; the keychain holding its key did not answer.
    s.variables.names.insert("BRAVE_API_KEY".into());
    let report = compute(
        &catalog(vec![uses_vault, missing, plain, oauth, authorized]),
        &s,
    );
    assert_eq!(
        state(&report, "brave"),
        ConnectorState::SecretStoreUnreachable
    );
    assert_eq!(
        state(&report, "other"),
        ConnectorState::MissingConfiguration
    );
    assert_eq!(
        state(&report, "plain"),
        ConnectorState::NoCredentialRequired
    );
    assert_eq!(state(&report, "notion"), ConnectorState::NeedsAuthorization);
    assert_eq!(
        state(&report, "linear"),
        ConnectorState::SecretStoreUnreachable
    );
    assert!(!report.secret_store.reachable);
    assert!(
        report.unclaimed.is_empty(),
        "an unreachable store must not make credentials look unclaimed"
    );
}

#[test]
fn a_declared_unavailable_entry_wins_over_everything_else() {
    let mut entry = http(
        "strad",
        "https://s.example/mcp",
        &[("Authorization", "Bearer ${NOPE}")],
    );
    entry.unavailable = Some("Accepts only static bearer tokens.".into());
    let report = compute(&catalog(vec![entry]), &signals());
    let row = report.connector("strad").unwrap();
    assert_eq!(row.state, ConnectorState::Unavailable);
    assert_eq!(
        row.unavailable_reason.as_deref(),
        Some("Accepts only static bearer tokens.")
    );
    assert!(row.blocks_start);
}

#[test]
fn an_oauth_client_secret_placeholder_must_resolve() {
    let mut entry = http("slack", "https://mcp.slack.com/mcp", &[]);
    entry.oauth = Some(OAuthConfig {
        client_id: Some("1601185624273.8899143856786".into()),
        client_secret: Some("${SLACK_CLIENT_SECRET}".into()),
        ..OAuthConfig::default()
    });
    let report = compute(&catalog(vec![entry]), &signals());
    let row = report.connector("slack").unwrap();
    assert_eq!(row.state, ConnectorState::MissingConfiguration);
    assert_eq!(row.missing_variables[0].field, "oauth.clientSecret");
}

#[test]
fn credentials_under_a_key_the_catalog_no_longer_computes_are_unclaimed() {
    let entry = http("notion", "https://mcp.notion.com/mcp", &[]);
    let waiting = http(
        "keyed",
        "https://k.example/mcp",
        &[("X-Tenant", "${TENANT}")],
    );
    let mut s = signals();
    let live = key_of(&entry, &s);
    s.credentials = vec![
        credential(live.clone(), None, true, false),
        // The URL changed: same name, different hash.
        credential(
            CredentialKey("notion|0000000000000000".into()),
            None,
            true,
            false,
        ),
        // The server left the catalog.
        credential(
            CredentialKey("gone|1111111111111111".into()),
            None,
            true,
            false,
        ),
        // The key depends on an unresolved variable: we cannot tell, so we do not claim it is orphaned.
        credential(
            CredentialKey("keyed|2222222222222222".into()),
            None,
            true,
            false,
        ),
    ];
    let report = compute(&catalog(vec![entry, waiting]), &s);
    assert_eq!(state(&report, "notion"), ConnectorState::Ready);
    let keys: Vec<&str> = report
        .unclaimed
        .iter()
        .map(|u| u.credential_key.as_str())
        .collect();
    assert_eq!(
        keys,
        vec!["gone|1111111111111111", "notion|0000000000000000"]
    );
    assert!(report.unclaimed[1].why.contains("changed"));
    assert!(report.unclaimed[0].why.contains("No catalog entry"));
}

#[test]
fn an_invalid_entry_is_its_own_probe_failed_row_and_hides_nothing() {
    let good = stdio("good", &[]);
    let mut cat = catalog(vec![good]);
    cat.items.push(CatalogItem::Invalid(InvalidEntry {
        name: ServerName("bad".into()),
        source: PathBuf::from("/home/me/.config/patchbay/mcp.json"),
        error: EntryError {
            file: PathBuf::from("/home/me/.config/patchbay/mcp.json"),
            entry: "bad".into(),
            field: "/url".into(),
            message: "is required for type \"sse\"".into(),
        },
    }));
    let report = compute(&cat, &signals());
    assert_eq!(report.connectors.len(), 2);
    assert_eq!(report.connectors[0].name, "bad");
    assert_eq!(report.connectors[0].state, ConnectorState::ProbeFailed);
    assert!(report.connectors[0]
        .detail
        .contains("/home/me/.config/patchbay/mcp.json"));
    assert!(report.connectors[0].detail.contains("/url"));
    assert_eq!(state(&report, "good"), ConnectorState::NoCredentialRequired);
}

#[test]
fn rows_sort_by_severity_then_name_and_offered_leaves_out_the_blocked() {
    let mut unavailable = stdio("zz-unavailable", &[]);
    unavailable.unavailable = Some("Broken upstream.".into());
    let cat = catalog(vec![
        stdio("b-plain", &[]),
        http("a-oauth", "https://a.example/mcp", &[]),
        stdio("c-missing", &[("K", "${K}")]),
        unavailable,
        stdio("a-plain", &[]),
    ]);
    let report = compute(&cat, &signals());
    let names: Vec<&str> = report.connectors.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        vec![
            "a-oauth",
            "c-missing",
            "zz-unavailable",
            "a-plain",
            "b-plain"
        ]
    );
    assert_eq!(report.headline(), "3 need attention");

    let offered = Offered::from_report(&report);
    let offered_names: Vec<&str> = offered.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(offered_names, vec!["a-plain", "b-plain"]);
    let markdown = offered.to_markdown();
    assert!(
        markdown.contains("- zz-unavailable: Broken upstream."),
        "{markdown}"
    );
    assert!(
        markdown.contains("- c-missing: missing configuration (K)"),
        "{markdown}"
    );
}

#[test]
fn token_expired_is_offered_because_the_refresher_renews_it() {
    let entry = http("notion", "https://mcp.notion.com/mcp", &[]);
    let mut s = signals();
    s.credentials = vec![credential(
        key_of(&entry, &s),
        Some(now() - Duration::minutes(1)),
        true,
        false,
    )];
    let report = compute(&catalog(vec![entry]), &s);
    assert_eq!(state(&report, "notion"), ConnectorState::TokenExpired);
    assert_eq!(report.need_attention, 0);
    let offered = Offered::from_report(&report);
    assert_eq!(offered.servers.len(), 1);
    assert!(offered.unavailable.is_empty());
}

#[test]
fn the_report_serializes_to_the_documented_shape_without_secrets() {
    let entry = http("notion", "https://mcp.notion.com/mcp", &[]);
    let mut s = signals();
    s.variables.names.insert("X".into());
    s.variables
        .values
        .insert("X".into(), Secret::new("super-secret-value"));
    s.credentials = vec![credential(
        key_of(&entry, &s),
        Some(now() + Duration::hours(1)),
        true,
        false,
    )];
    let report = compute(&catalog(vec![entry, stdio("x", &[("X", "${X}")])]), &s);
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["version"], 1);
    assert_eq!(json["generated_at"], "2026-11-30T12:00:00Z");
    assert_eq!(json["worst"], "ready");
    assert_eq!(json["connectors"][0]["state"], "ready");
    assert_eq!(
        json["connectors"][0]["credential"]["expires_at"],
        "2026-11-30T13:00:00Z"
    );
    for key in [
        "name",
        "title",
        "description",
        "transport",
        "url",
        "state",
        "label",
        "severity",
        "needs_attention",
        "blocks_start",
        "detail",
        "action",
        "missing_variables",
        "unavailable_reason",
        "one_shot",
        "one_shot_note",
        "credential",
        "source",
    ] {
        assert!(
            json["connectors"][0].get(key).is_some(),
            "missing field {key}"
        );
    }
    let text = serde_json::to_string(&report).unwrap();
    assert!(!text.contains("super-secret-value"));
    let back: StatusReport = serde_json::from_value(json).unwrap();
    assert_eq!(back, report);
}

#[test]
fn variables_that_always_have_a_default_configure_no_credential() {
    let entry = stdio("fs", &[("ROOT", "${PATCHBAY_FS_ROOT:-.}")]);
    let report = compute(&catalog(vec![entry]), &signals());
    assert_eq!(state(&report, "fs"), ConnectorState::NoCredentialRequired);
    let entry = stdio("tenant", &[("TENANT", "${TENANT}")]);
    let mut s = signals();
    s.env.insert("TENANT".into(), "acme".into());
    assert_eq!(
        state(&compute(&catalog(vec![entry]), &s), "tenant"),
        ConnectorState::Ready
    );
}

#[test]
fn same_as_ignores_only_when_the_report_was_computed() {
    let cat = catalog(vec![http("notion", "https://mcp.notion.com/mcp", &[])]);
    let mut s = signals();
    let first = compute(&cat, &s);
    s.now = now() + Duration::seconds(30);
    let later = compute(&cat, &s);
    assert_ne!(first.generated_at, later.generated_at);
    assert!(first.same_as(&later));
    let mut changed = later.clone();
    changed.runtimes.push(patchbay_status::RuntimeSummary {
        runtime: "codex".into(),
        found: true,
        config_path: "/home/me/.codex/config.toml".into(),
    });
    assert!(
        !first.same_as(&changed),
        "a field beyond the first ones counts"
    );
}
