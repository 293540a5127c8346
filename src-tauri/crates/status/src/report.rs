//! The status report: every connector's row, sorted problems first, plus the unclaimed
//! credentials and the catalog's own health. Its JSON is documented in docs/status-json.md.

use crate::probe::{decide, LocalSignals, StoreHealth};
use crate::usage::{FoundIn, GalleryEntry, InUseReason, Origin};

use crate::{Action, ConnectorState};
use chrono::{DateTime, SecondsFormat, Utc};
use patchbay_catalog::{Catalog, CatalogItem, CredentialKey, ServerEntry};
use patchbay_vault::{CredentialRow, CredentialSource};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Bumped when a field is removed or changes meaning; additions keep it.
pub const REPORT_VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct MissingVariable {
    pub name: String,
    pub field: String,
}

/// A `${VAR}` a connector's entry uses, and where its value comes from now: what the window's
/// Keys part shows (never the value) and lets the user set, replace or clear in the vault.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct VariableStatus {
    pub name: String,
    /// The first field that uses it (`env.GITHUB_TOKEN`, `headers.Authorization`).
    pub field: String,
    pub source: VariableSource,
}

/// Where a variable's value comes from; the vault wins over the environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum VariableSource {
    /// Stored in Patchbay's vault.
    Vault,
    /// Set in the environment Patchbay runs in (or a client config's own secret).
    Environment,
    /// Unset, and the entry gives a default (`${VAR:-default}`).
    Default,
    /// Unset with no default: the connector cannot start.
    Missing,
    /// In the vault, but the keychain holding its key did not answer.
    Locked,
}

/// What the report says of a stored credential: metadata only, never a token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct CredentialSummary {
    pub key: String,
    #[serde(with = "rfc3339_opt")]
    #[cfg_attr(feature = "ts", ts(type = "string | null"))]
    pub expires_at: Option<DateTime<Utc>>,
    pub has_refresh_token: bool,
    pub issuer: Option<String>,
    #[serde(with = "rfc3339")]
    #[cfg_attr(feature = "ts", ts(type = "string"))]
    pub updated_at: DateTime<Utc>,
    /// The runtime (`claude_code`, `codex`) whose rotated pair Patchbay adopted last; `null` when
    /// Patchbay obtained the stored pair itself.
    #[serde(default)]
    pub last_rotated_by: Option<String>,
    #[serde(default, with = "rfc3339_opt")]
    #[cfg_attr(feature = "ts", ts(type = "string | null"))]
    pub last_rotated_at: Option<DateTime<Utc>>,
}

/// One runtime server a connector is bridged to (filled by the core's runtime bridges; empty
/// when none is configured or the report was computed without them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct BridgeSummary {
    /// `claude_code` or `codex`.
    pub runtime: String,
    /// The runtime's own name for the server (it decides the key).
    pub server_name: String,
    /// The key the runtime files the credential under.
    pub credential_key: String,
    /// Whether the runtime's credential store holds an entry under that key.
    pub in_store: bool,
}

/// One agent runtime and whether it was found on this machine (filled by the core's runtime
/// bridges; empty when the report was computed without them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct RuntimeSummary {
    /// `claude_code` or `codex`.
    pub runtime: String,
    /// Whether any of its files exist.
    pub found: bool,
    /// Its server config file (`.claude.json`; Codex's `config.toml`).
    pub config_path: String,
}

impl From<&CredentialRow> for CredentialSummary {
    fn from(row: &CredentialRow) -> Self {
        CredentialSummary {
            key: row.credential_key.as_str().to_owned(),
            expires_at: row.expires_at,
            has_refresh_token: row.has_refresh_token,
            issuer: row.issuer.clone(),
            updated_at: row.updated_at,
            last_rotated_by: row.rotated_by.clone(),
            last_rotated_at: row.rotated_at,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ConnectorStatus {
    pub name: String,
    pub title: String,
    pub description: Option<String>,
    /// `stdio`, `streamable-http`, `sse`, or `unknown` for an entry that failed validation.
    pub transport: String,
    pub url: Option<String>,
    pub state: ConnectorState,
    pub label: String,
    pub severity: u8,
    pub needs_attention: bool,
    pub blocks_start: bool,
    pub detail: String,
    pub action: Option<Action>,
    pub missing_variables: Vec<MissingVariable>,
    /// Every variable its entry uses, once each, in the order first used.
    #[serde(default)]
    pub variables: Vec<VariableStatus>,
    pub unavailable_reason: Option<String>,
    pub one_shot: bool,
    pub one_shot_note: Option<String>,
    pub credential: Option<CredentialSummary>,
    pub source: String,
    /// The runtime servers this connector is bridged to (docs/status-json.md).
    #[serde(default)]
    pub bridges: Vec<BridgeSummary>,
    /// Runtimes found on this machine that this connector can be added to ("Add to Claude
    /// Code"): remote, OAuth-capable, not bridged there yet, and a transport the runtime speaks.
    pub can_add_to: Vec<String>,
    /// The refresher's last attempts on this connector's credential, newest first (filled by the
    /// core; empty when it never tried): the window's error drawer.
    #[serde(default)]
    pub refresh_history: Vec<RefreshEntry>,
    /// Set while its connection checks keep failing (the health board's degraded rule, filled
    /// by the core's `Patchbay::status`); such a row needs attention whatever its state.
    #[serde(default)]
    pub degraded: Option<DegradedStatus>,
    /// Why it is in use (filled by [`StatusReport::apply_usage`]; empty before).
    #[serde(default)]
    pub in_use_because: Vec<InUseReason>,
    /// The client config entries that configure it ("Found in Cursor, Claude Code").
    #[serde(default)]
    pub found_in: Vec<FoundIn>,
    /// A catalog entry, or a server configured in a client and absent from every catalog.
    #[serde(default)]
    pub origin: Origin,
    /// Where the stored credential came from: `patchbay` (authorized here), or adopted from
    /// `claude_code`, `codex`, `mcp_remote`; `null` without a credential.
    #[serde(default)]
    pub credential_source: Option<CredentialSource>,
}

/// Why and since when a connector is degraded (from the health board).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct DegradedStatus {
    #[serde(with = "rfc3339")]
    #[cfg_attr(feature = "ts", ts(type = "string"))]
    pub since: DateTime<Utc>,
    /// The failure that tipped it (or the latest one since), one line, secrets scrubbed.
    pub error: String,
}

/// One refresh attempt, as the error drawer shows it. Nothing secret: the detail was scrubbed
/// before it was recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct RefreshEntry {
    #[serde(with = "rfc3339")]
    #[cfg_attr(feature = "ts", ts(type = "string"))]
    pub at: DateTime<Utc>,
    pub outcome: RefreshAttemptOutcome,
    pub http_status: Option<u16>,
    pub summary: String,
    /// The raw answer (up to 4 KB), secrets scrubbed.
    pub detail: Option<String>,
    pub retries: u32,
}

/// How one refresh attempt ended. The vault keeps it as [`RefreshAttemptOutcome::id`] text;
/// the report, the window and `--json` see this enum (the same snake_case ids).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum RefreshAttemptOutcome {
    /// The token endpoint issued a new pair.
    Refreshed,
    /// A runtime had rotated a newer pair, which Patchbay took instead of refreshing.
    Adopted,
    /// The token endpoint could not be reached: the request never got there.
    Retryable,
    /// The request went out and its answer was lost or unusable.
    Ambiguous,
    /// 429 or 5xx: the refresh token is kept, the next pass tries again.
    Transient,
    /// The server refused Patchbay's request rather than the token; the refresh token is kept.
    Rejected,
    /// The refresh token was refused and is dropped: authorize again.
    Permanent,
    /// A runtime reported its own refresh rejected: the credential is retired everywhere.
    Retired,
}

impl RefreshAttemptOutcome {
    /// Every outcome: what `FromStr` accepts (a test checks each against serde's spelling).
    pub const ALL: [RefreshAttemptOutcome; 8] = [
        RefreshAttemptOutcome::Refreshed,
        RefreshAttemptOutcome::Adopted,
        RefreshAttemptOutcome::Retryable,
        RefreshAttemptOutcome::Ambiguous,
        RefreshAttemptOutcome::Transient,
        RefreshAttemptOutcome::Rejected,
        RefreshAttemptOutcome::Permanent,
        RefreshAttemptOutcome::Retired,
    ];

    /// The snake_case id: the JSON value and the text the vault's history stores.
    pub fn id(self) -> &'static str {
        match self {
            RefreshAttemptOutcome::Refreshed => "refreshed",
            RefreshAttemptOutcome::Adopted => "adopted",
            RefreshAttemptOutcome::Retryable => "retryable",
            RefreshAttemptOutcome::Ambiguous => "ambiguous",
            RefreshAttemptOutcome::Transient => "transient",
            RefreshAttemptOutcome::Rejected => "rejected",
            RefreshAttemptOutcome::Permanent => "permanent",
            RefreshAttemptOutcome::Retired => "retired",
        }
    }
}

impl std::fmt::Display for RefreshAttemptOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id())
    }
}

/// A stored outcome text that no [`RefreshAttemptOutcome`] spells (a newer build wrote it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown refresh outcome {0:?} in the refresh history")]
pub struct UnknownRefreshOutcome(pub String);

impl std::str::FromStr for RefreshAttemptOutcome {
    type Err = UnknownRefreshOutcome;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        RefreshAttemptOutcome::ALL
            .into_iter()
            .find(|o| o.id() == text)
            .ok_or_else(|| UnknownRefreshOutcome(text.to_owned()))
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct UnclaimedCredential {
    pub credential_key: String,
    pub server_name: String,
    pub server_url: Option<String>,
    #[serde(with = "rfc3339")]
    #[cfg_attr(feature = "ts", ts(type = "string"))]
    pub updated_at: DateTime<Utc>,
    pub why: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct SecretStoreStatus {
    /// Whether the vault's secrets can be unsealed (the keychain answered with this vault's key).
    pub reachable: bool,
    pub message: Option<String>,
    /// The keychain answered but the vault's key is missing from it or is not this vault's:
    /// unlocking will not help. `false` when it did not answer at all.
    #[serde(default)]
    pub key_unusable: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct CatalogSourceStatus {
    pub path: String,
    pub kind: patchbay_catalog::SourceKind,
    pub present: bool,
    pub entries: usize,
    pub error: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct CatalogStatus {
    pub sources: Vec<CatalogSourceStatus>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct StatusReport {
    pub version: u32,
    #[serde(with = "rfc3339")]
    #[cfg_attr(feature = "ts", ts(type = "string"))]
    pub generated_at: DateTime<Utc>,
    pub need_attention: usize,
    pub worst: Option<ConnectorState>,
    /// How many rows are degraded (their connection checks keep failing); counted in
    /// `need_attention` too.
    #[serde(default)]
    pub degraded: usize,
    pub secret_store: SecretStoreStatus,
    pub catalog: CatalogStatus,
    pub connectors: Vec<ConnectorStatus>,
    pub unclaimed: Vec<UnclaimedCredential>,
    /// The agent runtimes Patchbay bridges to, found or not (docs/status-json.md).
    #[serde(default)]
    pub runtimes: Vec<RuntimeSummary>,
    /// Catalog entries not in use, for the window's "Add connector" view (filled by
    /// [`StatusReport::apply_usage`]; empty before).
    #[serde(default)]
    pub gallery: Vec<GalleryEntry>,
    /// Each client config that could not be read or parsed, one line each naming the client and
    /// the file (its servers are missing from `connectors`; the other clients' are listed).
    #[serde(default)]
    pub client_errors: Vec<String>,
}

const ONE_SHOT_NOTE: &str = "This server issued no refresh token: nothing can renew this credential, so it will need authorizing again each time it lapses.";

impl StatusReport {
    /// "3 need attention" / "All 14 connectors ready": the header, the tray tooltip, the CLI's first line.
    pub fn headline(&self) -> String {
        let catalog_errors = self
            .catalog
            .sources
            .iter()
            .filter(|s| s.error.is_some())
            .count();
        let mut line = match (self.need_attention, self.connectors.len()) {
            (_, 0) if !self.gallery.is_empty() => "No connectors in use".to_owned(),
            (_, 0) => "No connectors in the catalog".to_owned(),
            (0, 1) => "The one connector is fine".to_owned(),
            (0, n) => format!("All {n} connectors are fine"),
            (1, _) => "1 needs attention".to_owned(),
            (n, _) => format!("{n} need attention"),
        };
        if self.degraded > 0 {
            line.push_str(&format!(" ({} degraded)", self.degraded));
        }
        if catalog_errors > 0 {
            line.push_str(&format!(
                "; {catalog_errors} catalog file{} could not be read",
                if catalog_errors == 1 { "" } else { "s" }
            ));
        }
        line
    }

    /// Equal but for when they were computed: nothing to push to the tray or the window.
    /// Derived from equality, so a field added later is compared without anyone remembering to.
    pub fn same_as(&self, other: &StatusReport) -> bool {
        StatusReport {
            generated_at: other.generated_at,
            ..self.clone()
        } == *other
    }

    pub fn connector(&self, name: &str) -> Option<&ConnectorStatus> {
        self.connectors.iter().find(|c| c.name == name)
    }

    /// Mark the rows the health board calls degraded (name → why): such a row needs attention
    /// whatever its state, is counted in `need_attention` and `degraded`, and sorts with the
    /// problems. Names not in the report are ignored.
    pub fn mark_degraded(&mut self, degraded: &BTreeMap<String, DegradedStatus>) {
        for row in self.connectors.iter_mut() {
            row.degraded = degraded.get(&row.name).cloned();
            row.needs_attention = row.state.needs_attention() || row.degraded.is_some();
        }
        self.recount();
    }

    /// Whether a script should be told that something needs a human (exit code 1).
    pub fn any_attention(&self) -> bool {
        self.need_attention > 0 || self.catalog.sources.iter().any(|s| s.error.is_some())
    }
}

/// The one computation. Never fails as a whole: anything unexpected in one entry becomes that
/// row's Probe failed.
pub fn compute(catalog: &Catalog, signals: &LocalSignals) -> StatusReport {
    let rows: HashMap<&str, &CredentialRow> = signals
        .credentials
        .iter()
        .map(|row| (row.credential_key.as_str(), row))
        .collect();

    let mut connectors = Vec::with_capacity(catalog.items.len());
    let mut claimed: HashSet<CredentialKey> = HashSet::new();
    let mut names_with_unknown_keys: HashSet<String> = HashSet::new();

    for item in &catalog.items {
        match item {
            CatalogItem::Invalid(invalid) => {
                names_with_unknown_keys.insert(invalid.name.0.clone());
                connectors.push(invalid_row(
                    invalid.name.as_str(),
                    &invalid.error.to_string(),
                    &invalid.source.display().to_string(),
                ));
            }
            CatalogItem::Server(entry) => {
                let outcome = catch_unwind(AssertUnwindSafe(|| decide(entry, signals, &rows)));
                match outcome {
                    Ok(decision) => {
                        if let Some(key) = &decision.credential_key {
                            claimed.insert(key.clone());
                        }
                        if !decision.key_known {
                            names_with_unknown_keys.insert(entry.name.0.clone());
                        }
                        connectors.push(row_for(entry, decision));
                    }
                    Err(_) => {
                        names_with_unknown_keys.insert(entry.name.0.clone());
                        let mut row = row_for_state(
                            entry,
                            ConnectorState::ProbeFailed,
                            "The status check for this connector failed unexpectedly; the other connectors are unaffected.".into(),
                        );
                        row.blocks_start = false;
                        connectors.push(row);
                    }
                }
            }
        }
    }

    sort_rows(&mut connectors);

    let mut unclaimed: Vec<UnclaimedCredential> = signals
        .credentials
        .iter()
        .filter(|row| !claimed.contains(&row.credential_key))
        .filter(|row| !names_with_unknown_keys.contains(&row.server_name))
        .map(|row| UnclaimedCredential {
            credential_key: row.credential_key.as_str().to_owned(),
            server_name: row.server_name.clone(),
            server_url: row.server_url.clone(),
            updated_at: row.updated_at,
            why: if catalog.get(&row.server_name).is_some() {
                "The catalog entry's URL or headers changed, so it computes a different key; runtimes will not find this credential.".into()
            } else {
                "No catalog entry of this name any more.".into()
            },
        })
        .collect();
    unclaimed.sort_by(|a, b| a.credential_key.cmp(&b.credential_key));

    let need_attention = connectors.iter().filter(|c| c.needs_attention).count();
    let worst = connectors.first().map(|c| c.state);
    let key_unusable = matches!(signals.store, StoreHealth::KeyUnusable { .. });
    StatusReport {
        version: REPORT_VERSION,
        generated_at: signals.now,
        need_attention,
        worst,
        degraded: 0,
        secret_store: match &signals.store {
            StoreHealth::Reachable => SecretStoreStatus {
                reachable: true,
                message: None,
                key_unusable,
            },
            StoreHealth::Unreachable { message } | StoreHealth::KeyUnusable { message } => {
                SecretStoreStatus {
                    reachable: false,
                    message: Some(message.clone()),
                    key_unusable,
                }
            }
        },
        catalog: CatalogStatus {
            sources: catalog
                .sources
                .iter()
                .map(|s| CatalogSourceStatus {
                    path: s.path.display().to_string(),
                    kind: s.kind,
                    present: s.present,
                    entries: s.entries,
                    error: s.error.as_ref().map(ToString::to_string),
                })
                .collect(),
        },
        connectors,
        unclaimed,
        runtimes: Vec::new(),
        gallery: Vec::new(),
        client_errors: Vec::new(),
    }
}

/// Problems first: rows needing attention (a degraded one included), then by severity, then by
/// name. Without degraded rows this is severity, then name.
pub(crate) fn sort_rows(rows: &mut [ConnectorStatus]) {
    rows.sort_by(|a, b| {
        b.needs_attention
            .cmp(&a.needs_attention)
            .then_with(|| b.severity.cmp(&a.severity))
            .then_with(|| a.name.cmp(&b.name))
    });
}

fn row_for(entry: &ServerEntry, decision: crate::probe::Decision) -> ConnectorStatus {
    let mut row = row_for_state(entry, decision.state, decision.detail);
    if let Some(label) = decision.label {
        row.label = label.to_owned();
    }
    row.missing_variables = decision.missing;
    row.variables = decision.variables;
    row.one_shot = decision.one_shot;
    row.one_shot_note = decision.one_shot.then(|| ONE_SHOT_NOTE.to_owned());
    row.credential = decision.credential;
    row
}

fn row_for_state(entry: &ServerEntry, state: ConnectorState, detail: String) -> ConnectorStatus {
    ConnectorStatus {
        name: entry.name.0.clone(),
        title: entry.display_title().to_owned(),
        description: entry.description.clone(),
        transport: entry.transport.display_name().to_owned(),
        url: entry.transport.url().map(str::to_owned),
        state,
        label: state.label().to_owned(),
        severity: state.severity(),
        needs_attention: state.needs_attention(),
        blocks_start: state.blocks_start(),
        detail,
        action: state.action(),
        missing_variables: Vec::new(),
        variables: Vec::new(),
        unavailable_reason: entry.unavailable.clone(),
        one_shot: false,
        one_shot_note: None,
        credential: None,
        source: entry.source.display().to_string(),
        bridges: Vec::new(),
        can_add_to: Vec::new(),
        refresh_history: Vec::new(),
        degraded: None,
        in_use_because: Vec::new(),
        found_in: Vec::new(),
        origin: Origin::Catalog,
        credential_source: None,
    }
}

fn invalid_row(name: &str, error: &str, source: &str) -> ConnectorStatus {
    let state = ConnectorState::ProbeFailed;
    ConnectorStatus {
        name: name.to_owned(),
        title: name.to_owned(),
        description: None,
        transport: "unknown".into(),
        url: None,
        state,
        label: state.label().to_owned(),
        severity: state.severity(),
        needs_attention: true,
        // A malformed entry cannot be started by anyone, unlike a probe that merely failed.
        blocks_start: true,
        detail: format!("The catalog entry is invalid: {error}"),
        action: Some(Action::EditCatalog),
        missing_variables: Vec::new(),
        variables: Vec::new(),
        unavailable_reason: None,
        one_shot: false,
        one_shot_note: None,
        credential: None,
        source: source.to_owned(),
        bridges: Vec::new(),
        can_add_to: Vec::new(),
        refresh_history: Vec::new(),
        degraded: None,
        in_use_because: Vec::new(),
        found_in: Vec::new(),
        origin: Origin::Catalog,
        credential_source: None,
    }
}

mod rfc3339 {
    use super::*;
    pub fn serialize<S: serde::Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&t.to_rfc3339_opts(SecondsFormat::Secs, true))
    }
    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<DateTime<Utc>, D::Error> {
        let text = String::deserialize(d)?;
        DateTime::parse_from_rfc3339(&text)
            .map(|t| t.with_timezone(&Utc))
            .map_err(serde::de::Error::custom)
    }
}

mod rfc3339_opt {
    use super::*;
    pub fn serialize<S: serde::Serializer>(
        t: &Option<DateTime<Utc>>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match t {
            Some(t) => s.serialize_str(&t.to_rfc3339_opts(SecondsFormat::Secs, true)),
            None => s.serialize_none(),
        }
    }
    pub fn deserialize<'de, D: serde::Deserializer<'de>>(
        d: D,
    ) -> Result<Option<DateTime<Utc>>, D::Error> {
        let text: Option<String> = Option::deserialize(d)?;
        text.map(|t| {
            DateTime::parse_from_rfc3339(&t)
                .map(|t| t.with_timezone(&Utc))
                .map_err(serde::de::Error::custom)
        })
        .transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refresh_outcomes_keep_their_stored_text_and_json_spelling() {
        for outcome in RefreshAttemptOutcome::ALL {
            let json = serde_json::to_value(outcome).unwrap();
            assert_eq!(json, outcome.id(), "{outcome:?}");
            assert_eq!(outcome.id().parse::<RefreshAttemptOutcome>(), Ok(outcome));
        }
        let ids: HashSet<&str> = RefreshAttemptOutcome::ALL.iter().map(|o| o.id()).collect();
        assert_eq!(ids.len(), RefreshAttemptOutcome::ALL.len());
        assert_eq!(
            "lost".parse::<RefreshAttemptOutcome>(),
            Err(UnknownRefreshOutcome("lost".into()))
        );
    }
}
