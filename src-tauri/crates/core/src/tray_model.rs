//! What the tray and the window's URL show of a status report, as plain data: the shell only
//! copies it onto the platform's tray, so everything here is testable without a display. Also
//! the row requests kept for a window whose page does not listen yet ([`PageRequests`]).

use patchbay_status::{Action, ConnectorState, StatusReport};

/// What clicking a connector's menu line does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrayAction {
    /// Open the Connectors window at the row.
    Open,
    /// Open the window at the row and start authorizing (needs_authorization).
    Authorize,
    /// The same for a connector that needs re-authorizing (needs_reauth).
    Reauthorize,
}

impl TrayAction {
    /// Whether the click starts an authorization.
    pub fn authorizes(self) -> bool {
        matches!(self, TrayAction::Authorize | TrayAction::Reauthorize)
    }
}

/// One menu line for a connector that needs attention.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrayItem {
    pub connector: String,
    /// "Authorize Notion…", "Re-authorize Figma…", or "GitHub — Missing configuration".
    pub label: String,
    pub action: TrayAction,
}

const OPEN_PREFIX: &str = "connector:";
const AUTHORIZE_PREFIX: &str = "authorize:";

impl TrayItem {
    /// The menu item's id, which [`TrayItem::parse_id`] reads back on a click.
    pub fn id(&self) -> String {
        let prefix = if self.action.authorizes() {
            AUTHORIZE_PREFIX
        } else {
            OPEN_PREFIX
        };
        format!("{prefix}{}", self.connector)
    }

    /// A clicked menu id: the connector and whether to authorize it. `None` for ids that are
    /// not a connector's (Open Connectors, Quit).
    pub fn parse_id(id: &str) -> Option<(&str, bool)> {
        if let Some(name) = id.strip_prefix(AUTHORIZE_PREFIX) {
            Some((name, true))
        } else {
            id.strip_prefix(OPEN_PREFIX).map(|name| (name, false))
        }
    }
}

/// Everything the tray shows. The shell updates the tray only when this changes (it edits the
/// menu in place, changing only the lines that changed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrayModel {
    pub worst: Option<ConnectorState>,
    /// Counts degraded connectors too (they need attention whatever their state).
    pub need_attention: usize,
    /// Connectors whose connection checks keep failing; they tint the badge red.
    pub degraded: usize,
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
            degraded: report.degraded,
            tooltip: format!("Patchbay — {headline}"),
            headline,
            items: report
                .connectors
                .iter()
                .filter(|c| c.needs_attention)
                .map(|c| {
                    let (action, label) = match c.action {
                        Some(Action::Authorize) => {
                            (TrayAction::Authorize, format!("Authorize {}…", c.title))
                        }
                        Some(Action::Reauthorize) => (
                            TrayAction::Reauthorize,
                            format!("Re-authorize {}…", c.title),
                        ),
                        // A degraded row's state may read Ready; what is wrong is the checks.
                        _ if c.degraded.is_some() => {
                            (TrayAction::Open, format!("{} — Degraded", c.title))
                        }
                        _ => (TrayAction::Open, format!("{} — {}", c.title, c.label)),
                    };
                    TrayItem {
                        connector: c.name.clone(),
                        label,
                        action,
                    }
                })
                .collect(),
        }
    }
}

/// What opening the window asks of one connector's row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub enum RowRequest {
    /// Scroll to it and highlight it.
    Focus,
    /// Start authorizing it, as its Authorize button does (the tray's "Authorize …" items: the
    /// user asked Patchbay itself).
    Authorize,
    /// Show it and ask before starting consent (`patchbay://authorize/NAME`: anything on the
    /// machine can open a link, so a link never starts consent by itself).
    AskToAuthorize,
}

/// The Connectors window's page, with a request for one connector's row when given: a window
/// created for a connector cannot have listened for the focus or authorize event yet, so the
/// request rides in the URL.
pub fn connectors_page(row: Option<(&str, RowRequest)>) -> String {
    match row {
        Some((name, RowRequest::Authorize)) => {
            format!("index.html?focus={}&authorize=1", percent_encode(name))
        }
        Some((name, RowRequest::AskToAuthorize)) => {
            format!("index.html?focus={}&authorize=ask", percent_encode(name))
        }
        Some((name, RowRequest::Focus)) => format!("index.html?focus={}", percent_encode(name)),
        None => "index.html".to_owned(),
    }
}

/// What a new Connectors page is created with (an initialization script sets it as
/// `window.__patchbayBoot`): the status and health board the app already holds, so that its
/// first rows are drawn at once, without waiting for the page's first commands. The page asks for
/// both again once it listens, and draws what changed.
#[derive(Debug, Clone, serde::Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct PageBoot {
    pub report: StatusReport,
    /// None when the board cannot be read now (the page shows no health lines until it can).
    pub board: Option<crate::HealthBoard>,
}

impl PageBoot {
    /// The initialization script handing it to the page. JSON is a JavaScript expression (and
    /// U+2028/U+2029 are allowed in its strings since ES2019), so it is set as it is.
    pub fn script(&self) -> Result<String, serde_json::Error> {
        Ok(format!(
            "window.__patchbayBoot = {};",
            serde_json::to_string(self)?
        ))
    }
}

/// A request for one connector's row that reached the window before its page listened, handed
/// to the page when it says it listens (the `page_listening` command).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct QueuedRowRequest {
    /// The connector's name.
    pub name: String,
    pub request: RowRequest,
}

/// The row requests for a window whose page does not listen yet: from the window's creation
/// until its page says it listens ([`PageRequests::listening`]), a request sent as an event would
/// be lost, so it is kept here and handed over once.
///
/// Merge rule: every request is kept, in the order it came, as the events would have been
/// delivered; a request equal to one already kept (same row, same kind) moves to the end rather
/// than being kept twice (the page ends on the row asked for last). At most [`Self::LIMIT`] are
/// kept, the oldest dropped first, since a page that never listens must not make it grow.
#[derive(Debug, Default)]
pub struct PageRequests {
    /// Which page the state is for: counts windows created.
    page: u64,
    listening: bool,
    queued: Vec<QueuedRowRequest>,
}

impl PageRequests {
    /// The most requests kept for a page that has not listened yet.
    pub const LIMIT: usize = 16;

    /// No window yet: nothing listens (usable in a `static`).
    pub const fn new() -> PageRequests {
        PageRequests {
            page: 0,
            listening: false,
            queued: Vec::new(),
        }
    }

    /// A window (and page) is being created: it does not listen yet, and requests kept for an
    /// earlier page are dropped (the new page gets its request in its URL). Answers the page's
    /// number, for [`PageRequests::page_gone`].
    pub fn page_created(&mut self) -> u64 {
        self.page += 1;
        self.listening = false;
        self.queued.clear();
        self.page
    }

    /// Page `page`'s window was destroyed: nothing listens until the next window's page says so.
    /// A late notice for an earlier page changes nothing.
    pub fn page_gone(&mut self, page: u64) {
        if page == self.page {
            self.listening = false;
            self.queued.clear();
        }
    }

    /// Whether the page listens, so that a request is sent as an event at once.
    pub fn is_listening(&self) -> bool {
        self.listening
    }

    /// A request for the window: `Some` back when the page listens (send it as events now),
    /// `None` when it was kept for the page.
    pub fn request(&mut self, name: &str, request: RowRequest) -> Option<QueuedRowRequest> {
        let row = QueuedRowRequest {
            name: name.to_owned(),
            request,
        };
        if self.listening {
            return Some(row);
        }
        self.queued.retain(|kept| *kept != row);
        if self.queued.len() == Self::LIMIT {
            self.queued.remove(0);
        }
        self.queued.push(row);
        None
    }

    /// The page has registered its listeners: from now on requests are sent as events; answers
    /// those kept meanwhile, in order (once: a second call answers none).
    pub fn listening(&mut self) -> Vec<QueuedRowRequest> {
        self.listening = true;
        std::mem::take(&mut self.queued)
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
                    enabled: None,
                    timeout_ms: None,
                    retry: None,
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
                wanted_scopes: Default::default(),
            },
        )
    }

    #[test]
    fn the_page_boot_script_hands_over_the_report_as_sent() {
        let mut boot = PageBoot {
            report: report(&[("b", true), ("a", false)]),
            board: None,
        };
        // A title that would end a string or a line in a careless script.
        if let Some(first) = boot.report.connectors.first_mut() {
            first.title = "quote \" \u{2028} </script> b".into();
        }
        let script = boot.script().unwrap();
        let json = script
            .strip_prefix("window.__patchbayBoot = ")
            .and_then(|s| s.strip_suffix(';'))
            .expect("one assignment");
        let back: serde_json::Value = serde_json::from_str(json).unwrap();
        assert_eq!(back, serde_json::to_value(&boot).unwrap());
        assert_eq!(
            back["report"]["connectors"][0]["title"],
            "quote \" \u{2028} </script> b"
        );
        assert_eq!(back["board"], serde_json::Value::Null);
    }

    #[test]
    fn lists_only_what_needs_attention_in_report_order() {
        let model = TrayModel::of(&report(&[("b", true), ("a", false), ("c", true)]));
        assert_eq!(model.need_attention, 2);
        assert_eq!(model.tooltip, "Patchbay — 2 need attention");
        let labels: Vec<&str> = model.items.iter().map(|i| i.label.as_str()).collect();
        assert_eq!(labels, vec!["Authorize b title…", "Authorize c title…"]);
        assert!(model
            .items
            .iter()
            .all(|i| i.action == TrayAction::Authorize));
        assert_eq!(model.worst, Some(ConnectorState::NeedsAuthorization));
    }

    #[test]
    fn the_action_follows_the_rows_action() {
        let mut r = report(&[("figma", true), ("github", true), ("notion", true)]);
        let [figma, github, notion] = &mut r.connectors[..] else {
            panic!("three rows");
        };
        notion.title = "Notion".into();
        figma.title = "Figma".into();
        figma.state = ConnectorState::NeedsReauth;
        figma.label = "Needs re-auth".into();
        figma.action = Some(Action::Reauthorize);
        github.title = "GitHub".into();
        github.state = ConnectorState::MissingConfiguration;
        github.label = "Missing configuration".into();
        github.action = Some(Action::SetVariable);
        let model = TrayModel::of(&r);
        let items: Vec<(&str, &str, TrayAction)> = model
            .items
            .iter()
            .map(|i| (i.connector.as_str(), i.label.as_str(), i.action))
            .collect();
        assert_eq!(
            items,
            vec![
                ("figma", "Re-authorize Figma…", TrayAction::Reauthorize),
                ("github", "GitHub — Missing configuration", TrayAction::Open),
                ("notion", "Authorize Notion…", TrayAction::Authorize),
            ]
        );
        // A click finds its way back to the connector and the action.
        let ids: Vec<String> = model.items.iter().map(TrayItem::id).collect();
        assert_eq!(
            ids,
            ["authorize:figma", "connector:github", "authorize:notion"]
        );
        assert_eq!(TrayItem::parse_id(&ids[0]), Some(("figma", true)));
        assert_eq!(TrayItem::parse_id(&ids[1]), Some(("github", false)));
        assert_eq!(TrayItem::parse_id(&ids[2]), Some(("notion", true)));
        assert_eq!(TrayItem::parse_id("open"), None);
        assert_eq!(TrayItem::parse_id("quit"), None);
        // A change of action is a change of the model (the menu is rebuilt).
        let mut other = r.clone();
        other.connectors[2].action = Some(Action::Reauthorize);
        assert_ne!(TrayModel::of(&other), model);
    }

    #[test]
    fn a_degraded_connector_counts_on_the_badge_and_in_the_menu() {
        let mut r = report(&[("a", false), ("b", false), ("c", true)]);
        let degraded = [(
            "a".to_string(),
            patchbay_status::DegradedStatus {
                since: chrono::Utc::now(),
                error: "connection refused".into(),
            },
        )]
        .into();
        r.mark_degraded(&degraded);
        let model = TrayModel::of(&r);
        assert_eq!(model.need_attention, 2);
        assert_eq!(model.degraded, 1);
        assert_eq!(model.tooltip, "Patchbay — 2 need attention (1 degraded)");
        let items: Vec<(&str, &str)> = model
            .items
            .iter()
            .map(|i| (i.connector.as_str(), i.label.as_str()))
            .collect();
        assert_eq!(
            items,
            vec![("c", "Authorize c title…"), ("a", "a title — Degraded")]
        );
        assert_eq!(model.items[1].action, TrayAction::Open);
        // The badge counts it and turns red although the worst state is only amber.
        assert_eq!(
            crate::badge::tint_for(model.worst, model.degraded),
            crate::badge::RED
        );
        let icon = crate::badge::render_report(&r, 32);
        let plain = crate::badge::render(r.worst, 1, 32);
        assert_ne!(icon.rgba, plain.rgba);
    }

    #[test]
    fn an_all_clear_report_has_no_items() {
        let model = TrayModel::of(&report(&[("a", false)]));
        assert!(model.items.is_empty());
        assert_eq!(model.tooltip, "Patchbay — The one connector is fine");
    }

    fn row(name: &str, request: RowRequest) -> QueuedRowRequest {
        QueuedRowRequest {
            name: name.into(),
            request,
        }
    }

    #[test]
    fn requests_before_the_page_listens_are_kept_in_order_and_handed_over_once() {
        let mut page = PageRequests::new();
        page.page_created();
        assert!(!page.is_listening());
        assert_eq!(page.request("notion", RowRequest::Authorize), None);
        assert_eq!(page.request("figma", RowRequest::Focus), None);
        assert_eq!(page.request("linear", RowRequest::AskToAuthorize), None);
        assert_eq!(
            page.listening(),
            vec![
                row("notion", RowRequest::Authorize),
                row("figma", RowRequest::Focus),
                row("linear", RowRequest::AskToAuthorize),
            ]
        );
        assert!(page.is_listening());
        // Once listening, a request is for sending at once, and nothing more is kept.
        assert_eq!(
            page.request("figma", RowRequest::Focus),
            Some(row("figma", RowRequest::Focus))
        );
        assert_eq!(page.listening(), vec![]);
    }

    #[test]
    fn a_repeated_request_moves_to_the_end_and_other_kinds_for_a_row_are_all_kept() {
        let mut page = PageRequests::new();
        page.page_created();
        page.request("notion", RowRequest::Focus);
        page.request("figma", RowRequest::AskToAuthorize);
        page.request("notion", RowRequest::AskToAuthorize);
        page.request("notion", RowRequest::Focus);
        assert_eq!(
            page.listening(),
            vec![
                row("figma", RowRequest::AskToAuthorize),
                row("notion", RowRequest::AskToAuthorize),
                row("notion", RowRequest::Focus),
            ]
        );
    }

    #[test]
    fn at_most_the_limit_is_kept_the_oldest_dropped() {
        let mut page = PageRequests::new();
        page.page_created();
        let total = PageRequests::LIMIT + 3;
        for i in 0..total {
            page.request(&format!("c{i}"), RowRequest::Focus);
        }
        let kept: Vec<String> = page.listening().into_iter().map(|r| r.name).collect();
        let expected: Vec<String> = (3..total).map(|i| format!("c{i}")).collect();
        assert_eq!(kept, expected);
    }

    #[test]
    fn a_new_or_destroyed_window_does_not_listen_and_drops_what_was_kept() {
        let mut page = PageRequests::new();
        let first = page.page_created();
        page.listening();
        assert!(page.is_listening());
        // Destroyed: requests wait again (until a new window's page listens).
        page.page_gone(first);
        assert!(!page.is_listening());
        page.request("stale", RowRequest::Focus);
        // A new window gets its own request in its URL; what an earlier page never took is dropped.
        let second = page.page_created();
        assert_ne!(first, second);
        page.request("notion", RowRequest::Authorize);
        // A late notice about the first window changes nothing for the second.
        page.page_gone(first);
        assert_eq!(page.listening(), vec![row("notion", RowRequest::Authorize)]);
        assert!(page.is_listening());
        page.page_gone(first);
        assert!(page.is_listening());
        page.page_gone(second);
        assert!(!page.is_listening());
    }

    #[test]
    fn a_queued_request_serializes_as_the_page_reads_it() {
        let json = serde_json::to_value(vec![
            row("notion", RowRequest::Focus),
            row("figma", RowRequest::Authorize),
            row("linear", RowRequest::AskToAuthorize),
        ])
        .unwrap();
        assert_eq!(
            json,
            serde_json::json!([
                { "name": "notion", "request": "focus" },
                { "name": "figma", "request": "authorize" },
                { "name": "linear", "request": "ask_to_authorize" },
            ])
        );
    }

    #[test]
    fn the_page_url_carries_the_focused_connector_encoded() {
        assert_eq!(connectors_page(None), "index.html");
        assert_eq!(
            connectors_page(Some(("notion", RowRequest::Focus))),
            "index.html?focus=notion"
        );
        assert_eq!(
            connectors_page(Some(("notion", RowRequest::Authorize))),
            "index.html?focus=notion&authorize=1"
        );
        assert_eq!(
            connectors_page(Some(("notion", RowRequest::AskToAuthorize))),
            "index.html?focus=notion&authorize=ask"
        );
        assert_eq!(
            connectors_page(Some(("a b/é&x", RowRequest::Focus))),
            "index.html?focus=a%20b%2F%C3%A9%26x"
        );
    }
}
