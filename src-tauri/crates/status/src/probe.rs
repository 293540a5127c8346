//! One connector's state from local signals: the seed's ConnectorStatusProbe, in the order a
//! runtime start reads them (declared unavailability, then `${VAR}`s, then the OAuth credential).

use crate::report::{CredentialSummary, MissingVariable, VariableSource, VariableStatus};
use crate::ConnectorState;
use chrono::{DateTime, Utc};
use patchbay_catalog::{CredentialKey, ServerEntry};
use patchbay_vault::{CredentialRow, Secret};
use std::collections::{BTreeSet, HashMap};

/// Whether the OS keychain holding the vault's key answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreHealth {
    Reachable,
    /// Locked, no Secret Service, D-Bus down. Never "missing".
    Unreachable {
        message: String,
    },
    /// The keychain answered, but the vault's key is missing from it, is not this vault's, or
    /// was refused: the sealed secrets cannot be opened, and unlocking will not change that.
    KeyUnusable {
        message: String,
    },
}

/// The `${VAR}` values kept in the vault. Names come from the database and are known even when
/// the keychain is down; values only when it answered.
#[derive(Debug, Clone, Default)]
pub struct VaultVariables {
    pub names: BTreeSet<String>,
    pub values: HashMap<String, Secret>,
}

/// Everything the computation reads. Built once per status by the core; tests build it by hand.
#[derive(Debug, Clone)]
pub struct LocalSignals {
    pub credentials: Vec<CredentialRow>,
    pub store: StoreHealth,
    pub variables: VaultVariables,
    /// The process environment (or a test's).
    pub env: HashMap<String, String>,
    /// Injected so expiry is testable.
    pub now: DateTime<Utc>,
    /// More access servers asked for than their credentials grant, by credential key
    /// ([`patchbay_vault::Vault::wanted_scopes`]).
    pub wanted_scopes: HashMap<String, String>,
}

/// How one variable resolves: the vault first, then the environment.
pub(crate) enum Resolution {
    Value(String),
    /// In the vault, but the keychain holding its key did not answer.
    Locked,
    Absent,
}

impl LocalSignals {
    pub(crate) fn resolve(&self, name: &str) -> Resolution {
        if self.variables.names.contains(name) {
            return match self.variables.values.get(name) {
                Some(secret) => Resolution::Value(secret.expose().to_owned()),
                None => Resolution::Locked,
            };
        }
        match self.env.get(name) {
            Some(value) => Resolution::Value(value.clone()),
            None => Resolution::Absent,
        }
    }

    fn value(&self, name: &str) -> Option<String> {
        match self.resolve(name) {
            Resolution::Value(v) => Some(v),
            Resolution::Locked | Resolution::Absent => None,
        }
    }
}

/// The decision for one valid entry, before it is dressed as a report row.
#[derive(Debug, Clone)]
pub(crate) struct Decision {
    pub state: ConnectorState,
    pub detail: String,
    pub missing: Vec<MissingVariable>,
    pub variables: Vec<VariableStatus>,
    /// The key the catalog computes now, when it could be computed.
    pub credential_key: Option<CredentialKey>,
    /// False when a variable the key depends on could not be resolved, so rows for this server
    /// name must not be called unclaimed.
    pub key_known: bool,
    pub credential: Option<CredentialSummary>,
    pub one_shot: bool,
    /// The row's label when it is not its state's own ("Needs more access").
    pub label: Option<&'static str>,
}

/// The label of a row whose credential grants less than its server asks for.
pub const NEEDS_MORE_ACCESS: &str = "Needs more access";

pub(crate) fn decide(
    entry: &ServerEntry,
    signals: &LocalSignals,
    rows: &HashMap<&str, &CredentialRow>,
) -> Decision {
    let mut decision = Decision {
        state: ConnectorState::Ready,
        detail: String::new(),
        missing: Vec::new(),
        variables: Vec::new(),
        credential_key: None,
        key_known: true,
        credential: None,
        one_shot: false,
        label: None,
    };

    if let Some(reason) = &entry.unavailable {
        decision.state = ConnectorState::Unavailable;
        decision.detail = format!(
            "Declared unavailable in {}: {reason} Nothing here fixes it; remove the declaration once the server works.",
            entry.source.display()
        );
        decision.key_known = false;
        return decision;
    }

    // One pass, one resolution per variable: where each value comes from, and from that what
    // is missing or locked. A variable is needed when any of its uses has no default; the first
    // such use is the field named.
    let uses = entry.variable_uses();
    let mut locked = Vec::new();
    for (i, first) in uses.iter().enumerate() {
        if uses[..i].iter().any(|earlier| earlier.name == first.name) {
            continue;
        }
        let needed_at = uses[i..]
            .iter()
            .find(|u| u.name == first.name && !u.has_default);
        let source = match signals.resolve(&first.name) {
            Resolution::Value(_) if signals.variables.names.contains(&first.name) => {
                VariableSource::Vault
            }
            Resolution::Value(_) => VariableSource::Environment,
            Resolution::Locked => VariableSource::Locked,
            Resolution::Absent if needed_at.is_none() => VariableSource::Default,
            Resolution::Absent => VariableSource::Missing,
        };
        let field = needed_at.unwrap_or(first).field.clone();
        match (source, needed_at) {
            (VariableSource::Missing, Some(_)) => decision.missing.push(MissingVariable {
                name: first.name.clone(),
                field: field.clone(),
            }),
            (VariableSource::Locked, Some(_)) => locked.push(first.name.clone()),
            _ => {}
        }
        decision.variables.push(VariableStatus {
            name: first.name.clone(),
            field,
            source,
        });
    }
    if !decision.missing.is_empty() {
        decision.state = ConnectorState::MissingConfiguration;
        decision.detail = missing_detail(&decision.missing);
        decision.key_known = false;
        return decision;
    }
    if !locked.is_empty() {
        decision.state = ConnectorState::SecretStoreUnreachable;
        decision.detail = match &signals.store {
            StoreHealth::KeyUnusable { .. } => format!(
                "{} is kept in the vault, which cannot be unsealed: the keychain answered without this vault's key (see the secret store line). Nothing was deleted.",
                locked.join(", ")
            ),
            _ => format!(
                "{} is kept in the vault, and the OS keychain holding the vault's key did not answer. Unlock the keychain; nothing was deleted.",
                locked.join(", ")
            ),
        };
        decision.key_known = false;
        return decision;
    }

    if !entry.is_oauth_capable() {
        // A literal credential header is still a configured credential; a variable that
        // always has a default (a root directory, a log level) is not one.
        let needs_value = uses.iter().any(|u| !u.has_default);
        if !needs_value && entry.static_credential_headers().is_empty() {
            decision.state = ConnectorState::NoCredentialRequired;
            decision.detail = "Configures no credential; nothing to do.".into();
        } else {
            decision.state = ConnectorState::Ready;
            decision.detail = match entry.static_credential_headers().first() {
                Some(header) => format!("Sends its credential in the {header} header; every variable it needs resolves."),
                None => "Every variable it needs resolves.".into(),
            };
        }
        return decision;
    }

    let key = match entry.credential_key(&|name| signals.value(name)) {
        Ok(Some(key)) => key,
        // Unreachable for a remote entry whose variables all resolved; treat as a probe failure.
        Ok(None) | Err(_) => {
            decision.state = ConnectorState::ProbeFailed;
            decision.detail = "Could not compute the credential key for this server.".into();
            decision.key_known = false;
            return decision;
        }
    };
    decision.credential_key = Some(key.clone());

    let Some(row) = rows.get(key.as_str()) else {
        decision.state = ConnectorState::NeedsAuthorization;
        decision.detail = format!(
            "No credential stored: {} needs you to authorize Patchbay on its consent screen.",
            entry.display_title()
        );
        return decision;
    };
    decision.credential = Some(CredentialSummary::from(*row));
    // "Leaves no refresh token" is the test: the flag plus a still-absent refresh token.
    decision.one_shot = row.one_shot && !row.has_refresh_token;

    match &signals.store {
        StoreHealth::Reachable => {}
        StoreHealth::Unreachable { message } => {
            decision.state = ConnectorState::SecretStoreUnreachable;
            decision.detail = format!(
                "A credential is stored, but the OS keychain holding the vault's key did not answer ({message}). Unlock it; nothing was deleted."
            );
            return decision;
        }
        // The keychain's own message is the secret store line's, said once for all rows.
        StoreHealth::KeyUnusable { .. } => {
            decision.state = ConnectorState::SecretStoreUnreachable;
            decision.detail = "A credential is stored, but it cannot be unsealed: the keychain answered without this vault's key (see the secret store line). Nothing was deleted.".into();
            return decision;
        }
    }

    let expired = row.is_expired(signals.now);
    // Granted, but less than the server asks for: only a consent for more helps (and an
    // expiry on top of it changes nothing about that).
    if let Some(scope) = signals.wanted_scopes.get(key.as_str()) {
        decision.state = ConnectorState::NeedsReauth;
        decision.label = Some(NEEDS_MORE_ACCESS);
        decision.detail = format!(
            "{} asks for more access than Patchbay's authorization grants (\"{scope}\"). Authorize asks for what was granted and this.",
            entry.display_title()
        );
        return decision;
    }
    if !expired {
        decision.state = ConnectorState::Ready;
        decision.detail = match row.expires_at {
            Some(_) if row.has_refresh_token => {
                "Authorized; Patchbay renews the token before it lapses.".into()
            }
            Some(_) => "Authorized; the token cannot be renewed and needs authorizing again when it lapses.".into(),
            None => "Authorized; the token does not expire.".into(),
        };
    } else if row.has_refresh_token {
        decision.state = ConnectorState::TokenExpired;
        decision.detail =
            "The access token lapsed; it is renewed with the stored refresh token, no action needed."
                .into();
    } else {
        decision.state = ConnectorState::NeedsReauth;
        decision.detail = format!(
            "The token lapsed and cannot be renewed: {} needs you to authorize Patchbay again.",
            entry.display_title()
        );
    }
    decision
}

fn missing_detail(missing: &[MissingVariable]) -> String {
    let names: Vec<String> = missing
        .iter()
        .map(|m| format!("{} (used in {})", m.name, m.field))
        .collect();
    let first = &missing[0].name;
    format!(
        "Missing {}. Store it in the keychain with `patchbay secret set {first}`, or set it in the environment Patchbay starts from.",
        names.join(", ")
    )
}
