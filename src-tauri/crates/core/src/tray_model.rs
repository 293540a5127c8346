//! What the tray and the window's URL show of a status report, as plain data: the shell only
//! copies it onto the platform's tray, so everything here is testable without a display.

use patchbay_status::{ConnectorState, StatusReport};

/// One menu line for a connector that needs attention.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrayItem {
    pub connector: String,
    /// "Notion — Needs authorization".
    pub label: String,
}

/// Everything the tray shows. The shell rebuilds the tray only when this changes (rebuilding a
/// menu closes it under the user's pointer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrayModel {
    pub worst: Option<ConnectorState>,
    pub need_attention: usize,
    /// The first, disabled menu line (AppIndicator trays show no tooltip).
    pub headline: String,
    pub tooltip: String,
    pub items: Vec<TrayItem>,
}

impl TrayModel {
    pub fn of(report: &StatusReport) -> TrayModel {
        let headline = report.headline();
        TrayModel {
            worst: report.worst,
            need_attention: report.need_attention,
            tooltip: format!("Patchbay — {headline}"),
            headline,
            items: report
                .connectors
                .iter()
                .filter(|c| c.needs_attention)
                .map(|c| TrayItem {
                    connector: c.name.clone(),
                    label: format!("{} — {}", c.title, c.label),
                })
                .collect(),
        }
    }
}

/// The Connectors window's page, focused on one connector when given: a window created for a
/// connector cannot have listened for the focus event yet, so the name rides in the URL.
pub fn connectors_page(focus: Option<&str>) -> String {
    match focus {
        Some(name) => format!("index.html?focus={}", percent_encode(name)),
        None => "index.html".to_owned(),
    }
}

/// Percent-encode everything but unreserved URL characters.
fn percent_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use patchbay_catalog::{CatalogItem, ServerEntry, ServerName, Transport};
    use patchbay_status::{compute, LocalSignals, StoreHealth, VaultVariables};

    fn report(names: &[(&str, bool)]) -> StatusReport {
        let items = names
            .iter()
            .map(|(name, remote)| {
                CatalogItem::Server(ServerEntry {
                    name: ServerName((*name).into()),
                    title: Some(format!("{name} title")),
                    description: None,
                    transport: if *remote {
                        Transport::StreamableHttp {
                            url: format!("https://{name}.example/mcp"),
                            headers: Default::default(),
                        }
                    } else {
                        Transport::Stdio {
                            command: "x".into(),
                            args: vec![],
                            env: Default::default(),
                        }
                    },
                    oauth: None,
                    unavailable: None,
                    source: "/c.json".into(),
                })
            })
            .collect();
        let catalog = patchbay_catalog::Catalog {
            items,
            sources: vec![],
        };
        compute(
            &catalog,
            &LocalSignals {
                credentials: vec![],
                store: StoreHealth::Reachable,
                variables: VaultVariables::default(),
                env: Default::default(),
                now: chrono::Utc::now(),
            },
        )
    }

    #[test]
    fn lists_only_what_needs_attention_in_report_order() {
        let model = TrayModel::of(&report(&[("b", true), ("a", false), ("c", true)]));
        assert_eq!(model.need_attention, 2);
        assert_eq!(model.tooltip, "Patchbay — 2 need attention");
        let labels: Vec<&str> = model.items.iter().map(|i| i.label.as_str()).collect();
        assert_eq!(
            labels,
            vec![
                "b title — Needs authorization",
                "c title — Needs authorization"
            ]
        );
        assert_eq!(model.worst, Some(ConnectorState::NeedsAuthorization));
    }

    #[test]
    fn an_all_clear_report_has_no_items() {
        let model = TrayModel::of(&report(&[("a", false)]));
        assert!(model.items.is_empty());
        assert_eq!(model.tooltip, "Patchbay — The one connector is fine");
    }

    #[test]
    fn the_page_url_carries_the_focused_connector_encoded() {
        assert_eq!(connectors_page(None), "index.html");
        assert_eq!(connectors_page(Some("notion")), "index.html?focus=notion");
        assert_eq!(
            connectors_page(Some("a b/é&x")),
            "index.html?focus=a%20b%2F%C3%A9%26x"
        );
    }
}
