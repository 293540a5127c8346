//! What an agent is offered (the seed's `get_configs`): the servers that can start now, then a
//! short Unavailable roster so an agent can tell "exists and is broken" from "does not exist".
//! A connector whose connection checks keep failing (degraded) is on the roster too, so an agent
//! is told the capability is gone rather than discovering it. So is one whose stored secret
//! cannot be unsealed (the keychain did not answer, or answered without the vault's key): the
//! reason is said once, not on every line.

use crate::{ConnectorState, StatusReport};
use serde::{Deserialize, Serialize};

/// Roster reasons land in a markdown list an agent reads: one line, compact.
const ROSTER_REASON_MAX: usize = 120;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OfferedServer {
    pub name: String,
    pub title: String,
    pub transport: String,
    pub state: ConnectorState,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RosterLine {
    pub name: String,
    pub state: ConnectorState,
    pub reason: String,
    /// On the roster because its connection checks failed, not because of its state.
    #[serde(default)]
    pub degraded: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Offered {
    pub servers: Vec<OfferedServer>,
    pub unavailable: Vec<RosterLine>,
    /// Why the vault's secrets cannot be unsealed, said once, when a connector is on the roster
    /// for it (its roster line points here instead of repeating it).
    #[serde(default)]
    pub vault: Option<String>,
}

/// The roster reason of a connector whose stored secret cannot be unsealed.
const UNSEALABLE: &str = "its stored secret cannot be unsealed (see the vault line)";

impl Offered {
    /// What to offer for `report`: a connector whose state blocks a start, whose stored secret
    /// cannot be unsealed (a runtime would be handed nothing that works), or that is degraded
    /// (see [`StatusReport::mark_degraded`]) goes to the roster with its reason.
    pub fn from_report(report: &StatusReport) -> Offered {
        let mut servers = Vec::new();
        let mut unavailable = Vec::new();
        let mut unsealable = false;
        for row in &report.connectors {
            if row.blocks_start {
                unavailable.push(RosterLine {
                    name: row.name.clone(),
                    state: row.state,
                    reason: compact_reason(row),
                    degraded: false,
                });
            } else if row.state == ConnectorState::SecretStoreUnreachable {
                unsealable = true;
                unavailable.push(RosterLine {
                    name: row.name.clone(),
                    state: row.state,
                    reason: UNSEALABLE.into(),
                    degraded: false,
                });
            } else if let Some(degraded) = &row.degraded {
                unavailable.push(RosterLine {
                    name: row.name.clone(),
                    state: row.state,
                    reason: one_line(
                        &format!(
                            "degraded: its connection checks keep failing ({})",
                            degraded.error
                        ),
                        ROSTER_REASON_MAX,
                    ),
                    degraded: true,
                });
            } else {
                servers.push(OfferedServer {
                    name: row.name.clone(),
                    title: row.title.clone(),
                    transport: row.transport.clone(),
                    state: row.state,
                });
            }
        }
        servers.sort_by(|a, b| a.name.cmp(&b.name));
        unavailable.sort_by(|a, b| a.name.cmp(&b.name));
        let vault = unsealable.then(|| {
            report
                .secret_store
                .message
                .clone()
                .unwrap_or_else(|| "the vault's key could not be loaded".into())
        });
        Offered {
            servers,
            unavailable,
            vault,
        }
    }

    /// The markdown an agent reads.
    pub fn to_markdown(&self) -> String {
        let mut out = String::from("MCP servers you can start:\n");
        if self.servers.is_empty() {
            out.push_str("- (none)\n");
        }
        for server in &self.servers {
            out.push_str(&format!(
                "- {} ({}, {})\n",
                server.name, server.title, server.transport
            ));
        }
        if !self.unavailable.is_empty() {
            out.push_str("\nUnavailable:\n");
            if let Some(vault) = &self.vault {
                out.push_str(&format!("(vault: {vault})\n"));
            }
            for line in &self.unavailable {
                out.push_str(&format!("- {}: {}\n", line.name, line.reason));
            }
        }
        out
    }
}

fn compact_reason(row: &crate::ConnectorStatus) -> String {
    let reason = match row.state {
        ConnectorState::Unavailable => row
            .unavailable_reason
            .clone()
            .unwrap_or_else(|| "declared unavailable".into()),
        ConnectorState::MissingConfiguration => {
            let names: Vec<&str> = row
                .missing_variables
                .iter()
                .map(|m| m.name.as_str())
                .collect();
            format!("missing configuration ({})", names.join(", "))
        }
        ConnectorState::NeedsAuthorization => "needs authorization".into(),
        ConnectorState::NeedsReauth => "needs re-authorization".into(),
        ConnectorState::ProbeFailed => "invalid catalog entry".into(),
        other => other.label().to_lowercase(),
    };
    one_line(&reason, ROSTER_REASON_MAX)
}

/// Collapse whitespace to single spaces and cut at `max` characters, with an ellipsis.
fn one_line(text: &str, max: usize) -> String {
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if collapsed.chars().count() <= max {
        return collapsed;
    }
    let cut: String = collapsed.chars().take(max - 1).collect();
    format!("{}…", cut.trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DegradedStatus, LocalSignals, StoreHealth, VaultVariables};
    use patchbay_catalog::{parse, CatalogItem};
    use std::collections::BTreeMap;

    #[test]
    fn degraded_connectors_move_to_the_roster() {
        let text = r#"{"mcpServers":{
            "up":{"type":"stdio","command":"node"},
            "down":{"type":"stdio","command":"node"},
            "declared":{"type":"stdio","command":"node","unavailable":"Broken."}}}"#;
        let items: Vec<CatalogItem> = parse(text, std::path::Path::new("t.json")).unwrap();
        let catalog = patchbay_catalog::Catalog {
            items,
            sources: vec![],
        };
        let signals = LocalSignals {
            credentials: vec![],
            store: StoreHealth::Reachable,
            variables: VaultVariables::default(),
            env: Default::default(),
            now: chrono::Utc::now(),
            wanted_scopes: Default::default(),
        };
        let mut report = crate::compute(&catalog, &signals);
        let plain = Offered::from_report(&report);
        let why = |error: &str| DegradedStatus {
            since: signals.now,
            error: error.into(),
        };
        let degraded: BTreeMap<String, DegradedStatus> = [
            ("down".to_string(), why("connection refused")),
            ("declared".to_string(), why("x")),
        ]
        .into();
        report.mark_degraded(&degraded);
        let offered = Offered::from_report(&report);
        let names: Vec<&str> = offered.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["up"]);
        let down = offered
            .unavailable
            .iter()
            .find(|l| l.name == "down")
            .unwrap();
        assert!(down.degraded);
        assert!(
            down.reason.contains("connection refused"),
            "{}",
            down.reason
        );
        let declared = offered
            .unavailable
            .iter()
            .find(|l| l.name == "declared")
            .unwrap();
        assert!(!declared.degraded, "its own reason wins");
        assert!(offered.to_markdown().contains("- down: degraded"));
        assert_eq!(plain.unavailable.len(), 1);
    }

    #[test]
    fn a_secret_that_cannot_be_unsealed_is_never_offered_and_the_cause_said_once() {
        let text = r#"{"mcpServers":{
            "vars":{"type":"stdio","command":"node","env":{"K":"${KEPT}"}},
            "plain":{"type":"stdio","command":"node"}}}"#;
        let items: Vec<CatalogItem> = parse(text, std::path::Path::new("t.json")).unwrap();
        let catalog = patchbay_catalog::Catalog {
            items,
            sources: vec![],
        };
        let message = "the vault master key is missing from the OS keychain".to_string();
        for (store, answered) in [
            (
                StoreHealth::KeyUnusable {
                    message: message.clone(),
                },
                true,
            ),
            (
                StoreHealth::Unreachable {
                    message: message.clone(),
                },
                false,
            ),
        ] {
            let signals = LocalSignals {
                credentials: vec![],
                store,
                variables: VaultVariables {
                    names: ["KEPT".to_string()].into(),
                    values: Default::default(),
                },
                env: Default::default(),
                now: chrono::Utc::now(),
                wanted_scopes: Default::default(),
            };
            let report = crate::compute(&catalog, &signals);
            assert_eq!(report.secret_store.key_unusable, answered);
            let row = report.connector("vars").unwrap();
            assert_eq!(row.state, ConnectorState::SecretStoreUnreachable);
            assert_eq!(
                row.detail.contains("did not answer"),
                !answered,
                "{}",
                row.detail
            );
            let offered = Offered::from_report(&report);
            let names: Vec<&str> = offered.servers.iter().map(|s| s.name.as_str()).collect();
            assert_eq!(names, ["plain"]);
            assert_eq!(offered.unavailable[0].reason, UNSEALABLE);
            assert_eq!(offered.to_markdown().matches(&message).count(), 1);
        }
    }

    #[test]
    fn one_line_collapses_and_cuts() {
        assert_eq!(one_line("a\n  b\tc", 50), "a b c");
        let long = "x".repeat(300);
        let cut = one_line(&long, 120);
        assert_eq!(cut.chars().count(), 120);
        assert!(cut.ends_with('…'));
    }
}
