//! Which desktop notifications to show: one when a connector newly needs a human (Needs
//! authorization, Needs re-auth), once per transition, never a stream. The shell shows them and
//! opens the window at the row on click; the decision lives here so it is tested.
//!
//! The first report only sets the baseline: starting the app with twelve unauthorized catalog
//! servers is not twelve events. A connector that appears already needing a human (just added)
//! is not one either; the user is looking at it. Nor is a connector whose stored credential is
//! gone (Ready or Token expired, then Needs authorization): only a person removes one (Disconnect,
//! a catalog edit that changed its server, a secret reset), and telling them what they just did
//! is noise. A credential that stops working (Needs re-auth) is always said.

use std::collections::HashMap;

use patchbay_status::{ConnectorState, StatusReport, NEEDS_MORE_ACCESS};

/// One notification: the connector (the row to open on click), a title and a body.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Notice {
    pub connector: String,
    pub title: String,
    pub body: String,
}

/// The states in which only a human can help.
pub fn needs_human(state: ConnectorState) -> bool {
    matches!(
        state,
        ConnectorState::NeedsAuthorization | ConnectorState::NeedsReauth
    )
}

/// A stored credential gone: the only way from Ready or Token expired to Needs authorization.
fn removed_by_hand(before: ConnectorState, now: ConnectorState) -> bool {
    matches!(before, ConnectorState::Ready | ConnectorState::TokenExpired)
        && now == ConnectorState::NeedsAuthorization
}

/// Remembers each connector's last state and yields a [`Notice`] per transition into a state
/// that needs a human.
#[derive(Debug, Default)]
pub struct NeedsHumanTracker {
    last: Option<HashMap<String, ConnectorState>>,
}

impl NeedsHumanTracker {
    pub fn new() -> NeedsHumanTracker {
        NeedsHumanTracker::default()
    }

    pub fn observe(&mut self, report: &StatusReport) -> Vec<Notice> {
        let current: HashMap<String, ConnectorState> = report
            .connectors
            .iter()
            .map(|c| (c.name.clone(), c.state))
            .collect();
        let Some(last) = self.last.replace(current) else {
            return Vec::new();
        };
        report
            .connectors
            .iter()
            .filter(|c| needs_human(c.state))
            .filter(|c| {
                last.get(&c.name).is_some_and(|before| {
                    !needs_human(*before) && !removed_by_hand(*before, c.state)
                })
            })
            .map(|c| Notice {
                connector: c.name.clone(),
                title: match c.state {
                    ConnectorState::NeedsReauth if c.label == NEEDS_MORE_ACCESS => {
                        format!("{} needs more access", c.title)
                    }
                    ConnectorState::NeedsReauth => format!("{} needs re-authorizing", c.title),
                    _ => format!("{} needs authorizing", c.title),
                },
                body: format!("{} Click to open it in Patchbay.", c.detail),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use patchbay_catalog::load;
    use patchbay_status::{compute, LocalSignals, StoreHealth, VaultVariables};

    fn report(states: &[(&str, ConnectorState)]) -> StatusReport {
        // A real report, its states then overridden: the tracker reads names, titles, states.
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("c.json");
        let servers: serde_json::Map<String, serde_json::Value> = states
            .iter()
            .map(|(n, _)| {
                (
                    n.to_string(),
                    serde_json::json!({"type": "http", "url": format!("https://{n}.example/mcp")}),
                )
            })
            .collect();
        std::fs::write(
            &file,
            serde_json::json!({ "mcpServers": servers }).to_string(),
        )
        .unwrap();
        let catalog = load(&[patchbay_catalog::CatalogSource::File {
            path: file,
            kind: patchbay_catalog::SourceKind::Default,
            required: true,
        }]);
        let mut r = compute(
            &catalog,
            &LocalSignals {
                credentials: vec![],
                store: StoreHealth::Reachable,
                variables: VaultVariables::default(),
                env: Default::default(),
                now: chrono::Utc::now(),
                wanted_scopes: Default::default(),
            },
        );
        for c in r.connectors.iter_mut() {
            c.state = states.iter().find(|(n, _)| *n == c.name).unwrap().1;
        }
        r
    }

    #[test]
    fn one_notice_per_transition_into_needing_a_human() {
        use ConnectorState::*;
        let mut t = NeedsHumanTracker::new();
        // Baseline: nothing, however many need a human.
        assert!(t
            .observe(&report(&[("notion", Ready), ("slack", NeedsAuthorization)]))
            .is_empty());
        // Ready -> Needs re-auth: one notice.
        let n = t.observe(&report(&[
            ("notion", NeedsReauth),
            ("slack", NeedsAuthorization),
        ]));
        assert_eq!(n.len(), 1);
        assert_eq!(n[0].connector, "notion");
        assert!(n[0].title.contains("re-authorizing"));
        // Still there: nothing more, and Needs re-auth -> Needs authorization is no new event.
        assert!(t
            .observe(&report(&[
                ("notion", NeedsReauth),
                ("slack", NeedsAuthorization)
            ]))
            .is_empty());
        assert!(t
            .observe(&report(&[
                ("notion", NeedsAuthorization),
                ("slack", NeedsAuthorization)
            ]))
            .is_empty());
        // Fixed, then broken again: a new transition, a new notice.
        t.observe(&report(&[("notion", Ready), ("slack", NeedsAuthorization)]));
        assert_eq!(
            t.observe(&report(&[
                ("notion", TokenExpired),
                ("slack", NeedsAuthorization)
            ]))
            .len(),
            0
        );
        assert_eq!(
            t.observe(&report(&[
                ("notion", NeedsReauth),
                ("slack", NeedsAuthorization)
            ]))
            .len(),
            1
        );
        // A connector that appears needing a human: no notice.
        assert!(t
            .observe(&report(&[
                ("notion", NeedsReauth),
                ("slack", NeedsAuthorization),
                ("linear", NeedsAuthorization)
            ]))
            .is_empty());
    }

    #[test]
    fn a_credential_removed_by_hand_is_not_news() {
        use ConnectorState::*;
        let mut t = NeedsHumanTracker::new();
        t.observe(&report(&[
            ("notion", Ready),
            ("slack", TokenExpired),
            ("figma", MissingConfiguration),
        ]));
        // Disconnect on notion and slack; figma's variable set: it now needs authorizing.
        let n = t.observe(&report(&[
            ("notion", NeedsAuthorization),
            ("slack", NeedsAuthorization),
            ("figma", NeedsAuthorization),
        ]));
        let said: Vec<&str> = n.iter().map(|n| n.connector.as_str()).collect();
        assert_eq!(said, ["figma"]);
        // Authorized again, then its refresh token rejected: said.
        t.observe(&report(&[
            ("notion", Ready),
            ("slack", NeedsAuthorization),
            ("figma", Ready),
        ]));
        let n = t.observe(&report(&[
            ("notion", NeedsReauth),
            ("slack", NeedsAuthorization),
            ("figma", Ready),
        ]));
        assert_eq!(n.len(), 1);
        assert_eq!(n[0].connector, "notion");
    }

    #[test]
    fn more_access_is_said_as_such_once() {
        use ConnectorState::*;
        let mut t = NeedsHumanTracker::new();
        t.observe(&report(&[("notion", Ready)]));
        let mut wanting = report(&[("notion", NeedsReauth)]);
        wanting.connectors[0].label = NEEDS_MORE_ACCESS.into();
        let n = t.observe(&wanting);
        assert_eq!(n.len(), 1);
        assert_eq!(n[0].title, "notion needs more access");
        assert!(t.observe(&wanting).is_empty(), "said once");
    }
}
