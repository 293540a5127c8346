//! The connector states, their labels, and the one severity table that orders them.

use serde::{Deserialize, Serialize};

/// A connector's state, serialized as the seed's snake_case id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum ConnectorState {
    Ready,
    NeedsAuthorization,
    TokenExpired,
    NeedsReauth,
    MissingConfiguration,
    Unavailable,
    SecretStoreUnreachable,
    NoCredentialRequired,
    ProbeFailed,
}

/// The severity of every state; higher is worse. Rows sort by it, problems first, and the tray
/// tints by the worst. A test asserts it covers [`ConnectorState::ALL`] exactly, so a new state
/// cannot quietly fall into the healthy group.
pub const SEVERITY: &[(ConnectorState, u8)] = &[
    (ConnectorState::ProbeFailed, 80),
    (ConnectorState::NeedsReauth, 70),
    (ConnectorState::NeedsAuthorization, 60),
    (ConnectorState::MissingConfiguration, 50),
    (ConnectorState::SecretStoreUnreachable, 45),
    (ConnectorState::Unavailable, 40),
    // Not a problem for a human: the refresher renews it unaided.
    (ConnectorState::TokenExpired, 20),
    (ConnectorState::NoCredentialRequired, 0),
    (ConnectorState::Ready, 0),
];

/// A row at or above this severity needs attention.
pub const ATTENTION_THRESHOLD: u8 = 30;

/// What the user can do about a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum Action {
    Authorize,
    Reauthorize,
    SetVariable,
    EditCatalog,
}

impl ConnectorState {
    /// Every state. The match in `label` is exhaustive, so adding a state without a label (and
    /// hence without thinking about it here) does not compile.
    pub const ALL: [ConnectorState; 9] = [
        ConnectorState::Ready,
        ConnectorState::NeedsAuthorization,
        ConnectorState::TokenExpired,
        ConnectorState::NeedsReauth,
        ConnectorState::MissingConfiguration,
        ConnectorState::Unavailable,
        ConnectorState::SecretStoreUnreachable,
        ConnectorState::NoCredentialRequired,
        ConnectorState::ProbeFailed,
    ];

    pub fn label(self) -> &'static str {
        match self {
            ConnectorState::Ready => "Ready",
            ConnectorState::NeedsAuthorization => "Needs authorization",
            ConnectorState::TokenExpired => "Token expired",
            ConnectorState::NeedsReauth => "Needs re-auth",
            ConnectorState::MissingConfiguration => "Missing configuration",
            ConnectorState::Unavailable => "Unavailable",
            ConnectorState::SecretStoreUnreachable => "Secret store unreachable",
            ConnectorState::NoCredentialRequired => "No credential required",
            ConnectorState::ProbeFailed => "Probe failed",
        }
    }

    /// The snake_case id, as in `--json`.
    pub fn id(self) -> &'static str {
        match self {
            ConnectorState::Ready => "ready",
            ConnectorState::NeedsAuthorization => "needs_authorization",
            ConnectorState::TokenExpired => "token_expired",
            ConnectorState::NeedsReauth => "needs_reauth",
            ConnectorState::MissingConfiguration => "missing_configuration",
            ConnectorState::Unavailable => "unavailable",
            ConnectorState::SecretStoreUnreachable => "secret_store_unreachable",
            ConnectorState::NoCredentialRequired => "no_credential_required",
            ConnectorState::ProbeFailed => "probe_failed",
        }
    }

    pub fn severity(self) -> u8 {
        SEVERITY
            .iter()
            .find(|(state, _)| *state == self)
            .map(|(_, rank)| *rank)
            // Unreachable while the table test passes; an unranked state must never look healthy.
            .unwrap_or(u8::MAX)
    }

    pub fn needs_attention(self) -> bool {
        self.severity() >= ATTENTION_THRESHOLD
    }

    /// The seed's four states that stop an agent runtime from starting the server.
    /// Token expired does not block (the refresher renews it); a store that did not answer or a
    /// probe that failed leaves the server offered, since those hit every server at once.
    pub fn blocks_start(self) -> bool {
        matches!(
            self,
            ConnectorState::MissingConfiguration
                | ConnectorState::NeedsAuthorization
                | ConnectorState::NeedsReauth
                | ConnectorState::Unavailable
        )
    }

    pub fn action(self) -> Option<Action> {
        match self {
            ConnectorState::NeedsAuthorization => Some(Action::Authorize),
            ConnectorState::NeedsReauth => Some(Action::Reauthorize),
            ConnectorState::MissingConfiguration => Some(Action::SetVariable),
            ConnectorState::Unavailable | ConnectorState::ProbeFailed => Some(Action::EditCatalog),
            ConnectorState::Ready
            | ConnectorState::TokenExpired
            | ConnectorState::SecretStoreUnreachable
            | ConnectorState::NoCredentialRequired => None,
        }
    }
}

impl std::fmt::Display for ConnectorState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.label())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn severity_table_covers_every_state_exactly_once() {
        let ranked: Vec<ConnectorState> = SEVERITY.iter().map(|(s, _)| *s).collect();
        let unique: HashSet<_> = ranked.iter().copied().collect();
        assert_eq!(unique.len(), ranked.len(), "a state is ranked twice");
        let all: HashSet<_> = ConnectorState::ALL.iter().copied().collect();
        assert_eq!(unique, all, "the severity table and the states differ");
        for state in ConnectorState::ALL {
            assert_ne!(state.severity(), u8::MAX, "{state:?} has no rank");
        }
    }

    #[test]
    fn all_lists_every_state_once() {
        let ids: HashSet<_> = ConnectorState::ALL.iter().map(|s| s.id()).collect();
        assert_eq!(ids.len(), 9);
        for state in ConnectorState::ALL {
            let json = serde_json::to_string(&state).unwrap();
            assert_eq!(json, format!("\"{}\"", state.id()));
        }
    }

    #[test]
    fn problems_outrank_healthy_states() {
        for problem in [
            ConnectorState::NeedsAuthorization,
            ConnectorState::NeedsReauth,
            ConnectorState::MissingConfiguration,
            ConnectorState::Unavailable,
            ConnectorState::SecretStoreUnreachable,
            ConnectorState::ProbeFailed,
        ] {
            assert!(problem.needs_attention(), "{problem:?}");
            assert!(problem.severity() > ConnectorState::TokenExpired.severity());
        }
        for fine in [
            ConnectorState::Ready,
            ConnectorState::NoCredentialRequired,
            ConnectorState::TokenExpired,
        ] {
            assert!(!fine.needs_attention(), "{fine:?}");
        }
    }

    #[test]
    fn only_the_four_seed_states_block_a_start() {
        let blocking: HashSet<_> = ConnectorState::ALL
            .into_iter()
            .filter(|s| s.blocks_start())
            .collect();
        assert_eq!(
            blocking,
            HashSet::from([
                ConnectorState::MissingConfiguration,
                ConnectorState::NeedsAuthorization,
                ConnectorState::NeedsReauth,
                ConnectorState::Unavailable,
            ])
        );
    }

    #[test]
    fn authorize_only_where_a_consent_screen_is_the_fix() {
        for state in ConnectorState::ALL {
            let consent = matches!(
                state.action(),
                Some(Action::Authorize) | Some(Action::Reauthorize)
            );
            assert_eq!(
                consent,
                matches!(
                    state,
                    ConnectorState::NeedsAuthorization | ConnectorState::NeedsReauth
                ),
                "{state:?}"
            );
        }
    }
}
