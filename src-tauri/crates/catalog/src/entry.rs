//! One validated catalog entry, the predicates the status rules ask of it, the normalization
//! of its `unavailable` declaration, and its connection settings (`enabled`, `timeout_ms`,
//! `retry`: seed 004's per-entry fields) with their bounds.

use indexmap::IndexMap;
use serde::Serialize;
use std::path::PathBuf;

/// A catalog server's name: its key in the catalog's server map, and the runtime's server name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct ServerName(pub String);

impl ServerName {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for ServerName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// How the agent runtime reaches the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    Stdio {
        command: String,
        args: Vec<String>,
        /// In file order: order matters to nobody here, but we keep what the user wrote.
        env: IndexMap<String, String>,
    },
    /// Streamable HTTP (`streamable-http`, also spelled `http`).
    StreamableHttp {
        url: String,
        headers: IndexMap<String, String>,
    },
    /// Legacy HTTP+SSE.
    Sse {
        url: String,
        headers: IndexMap<String, String>,
    },
}

impl Transport {
    /// The name shown to users and in `--json`: `stdio`, `streamable-http` or `sse`.
    pub fn display_name(&self) -> &'static str {
        match self {
            Transport::Stdio { .. } => "stdio",
            Transport::StreamableHttp { .. } => "streamable-http",
            Transport::Sse { .. } => "sse",
        }
    }

    pub fn is_remote(&self) -> bool {
        !matches!(self, Transport::Stdio { .. })
    }

    pub fn url(&self) -> Option<&str> {
        match self {
            Transport::Stdio { .. } => None,
            Transport::StreamableHttp { url, .. } | Transport::Sse { url, .. } => Some(url),
        }
    }

    pub fn headers(&self) -> Option<&IndexMap<String, String>> {
        match self {
            Transport::Stdio { .. } => None,
            Transport::StreamableHttp { headers, .. } | Transport::Sse { headers, .. } => {
                Some(headers)
            }
        }
    }
}

/// The catalog's `oauth` block. Values may hold `${VAR}` placeholders (a client secret should).
/// `Debug` redacts the client secret unless it is nothing but one placeholder: a user catalog
/// may hold a literal one, and a printed entry must not carry it into a log.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct OAuthConfig {
    pub client_id: Option<String>,
    /// A placeholder such as `${SLACK_CLIENT_SECRET}`, never a literal secret in a shipped catalog.
    pub client_secret: Option<String>,
    pub redirect_uri: Option<String>,
    pub scopes: Vec<String>,
    /// RFC 8707 resource indicator override; `Some("")` suppresses the indicator.
    pub resource: Option<String>,
    /// Force paste-back completion.
    pub manual: bool,
    pub auth_server_metadata_url: Option<String>,
}

impl std::fmt::Debug for OAuthConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let client_secret = self.client_secret.as_deref().map(|value| {
            if is_one_placeholder(value) {
                value
            } else {
                "[redacted]"
            }
        });
        f.debug_struct("OAuthConfig")
            .field("client_id", &self.client_id)
            .field("client_secret", &client_secret)
            .field("redirect_uri", &self.redirect_uri)
            .field("scopes", &self.scopes)
            .field("resource", &self.resource)
            .field("manual", &self.manual)
            .field("auth_server_metadata_url", &self.auth_server_metadata_url)
            .finish()
    }
}

/// `${NAME}` and nothing else (no default, no literal around it): safe to print.
fn is_one_placeholder(value: &str) -> bool {
    value
        .strip_prefix("${")
        .and_then(|rest| rest.strip_suffix('}'))
        .is_some_and(crate::placeholder::is_variable_name)
}

/// A catalog entry that passed validation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerEntry {
    pub name: ServerName,
    pub title: Option<String>,
    pub description: Option<String>,
    pub transport: Transport,
    pub oauth: Option<OAuthConfig>,
    /// The normalized `unavailable` reason, when one is declared.
    pub unavailable: Option<String>,
    /// `enabled` as written: `Some(false)` takes the connector out of use even when a client
    /// has it configured, `Some(true)` puts it in use, `None` leaves that to the other signals.
    pub enabled: Option<bool>,
    /// `timeout_ms`: the limit on each request to the server (within [`TIMEOUT_MS_RANGE`]);
    /// `None` keeps the caller's defaults.
    pub timeout_ms: Option<u32>,
    /// `retry`: how a request that failed for a passing reason is tried again; `None` means
    /// one try.
    pub retry: Option<RetryPolicy>,
    /// The catalog file this entry came from.
    pub source: PathBuf,
}

/// The bounds of `timeout_ms`: at least 100 ms (less cannot finish a TLS handshake), at most
/// 10 minutes (a cold `npx -y` install stays well under that).
pub const TIMEOUT_MS_RANGE: std::ops::RangeInclusive<u32> = 100..=600_000;
/// The most retries `retry.max` may ask for (seed 004: max=3).
pub const RETRY_MAX_LIMIT: u32 = 3;
/// The bounds of `retry.base_ms`, the first wait.
pub const RETRY_BASE_MS_RANGE: std::ops::RangeInclusive<u32> = 10..=60_000;
/// The bounds of `retry.jitter`, the fraction each wait varies by either way.
pub const RETRY_JITTER_RANGE: std::ops::RangeInclusive<f64> = 0.0..=1.0;

/// The catalog's `retry` object: `{"max": 3, "base_ms": 500, "jitter": 0.3}`, every member
/// optional with those defaults (seed 004). The n-th retry waits `base_ms * 2^(n-1)`, varied by
/// up to `jitter` of itself either way.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// Retries after the first try, `0..=`[`RETRY_MAX_LIMIT`].
    pub max: u32,
    /// The wait before the first retry, in milliseconds; it doubles for each one after.
    pub base_ms: u32,
    /// 0.3 means each wait is drawn from 70 %..130 % of its nominal value.
    pub jitter: f64,
}

// Validation admits only finite jitter (no NaN), so equality is an equivalence.
impl Eq for RetryPolicy {}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max: RETRY_MAX_LIMIT,
            base_ms: 500,
            jitter: 0.3,
        }
    }
}

impl ServerEntry {
    /// The title to show: the declared one, else the name.
    pub fn display_title(&self) -> &str {
        self.title.as_deref().unwrap_or(self.name.as_str())
    }

    /// Names of headers that carry a static credential (see [`crate::is_credential_header`]).
    pub fn static_credential_headers(&self) -> Vec<&str> {
        self.transport
            .headers()
            .map(|h| {
                h.keys()
                    .map(String::as_str)
                    .filter(|name| crate::is_credential_header(name))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// A server Patchbay may run an OAuth flow for: remote, and no static credential header.
    pub fn is_oauth_capable(&self) -> bool {
        self.transport.is_remote() && self.static_credential_headers().is_empty()
    }

    /// Every `${VAR}` this entry uses, where, and whether it has a default.
    pub fn variable_uses(&self) -> Vec<crate::VariableUse> {
        crate::placeholder::variable_uses(self)
    }
}

/// The longest `unavailable` reason shown, in characters.
pub const UNAVAILABLE_MAX_CHARS: usize = 200;

/// Normalize a raw `unavailable` value: only a string that is non-empty after trimming declares
/// the entry unavailable. Whitespace runs (newlines included) collapse to one space and the reason
/// is cut at [`UNAVAILABLE_MAX_CHARS`] characters, because it lands on one line of a list an agent
/// reads; other control characters are escaped so they never reach a terminal raw. Absent
/// (`null`), blank and non-string values declare nothing.
pub fn normalize_unavailable(value: &serde_json::Value) -> Option<String> {
    let text = value.as_str()?;
    let collapsed =
        crate::text::escape_controls(&text.split_whitespace().collect::<Vec<_>>().join(" "));
    if collapsed.is_empty() {
        return None;
    }
    // Cut on a char boundary, then drop a space the cut may have left at the end.
    let cut: String = collapsed.chars().take(UNAVAILABLE_MAX_CHARS).collect();
    Some(cut.trim_end().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn debug_of_an_oauth_block_never_shows_a_literal_client_secret() {
        let literal = "sl4ck-L1teral-Secret-0123456789";
        for secret in [
            literal.to_string(),
            format!("${{SLACK_SECRET:-{literal}}}"),
            format!("x${{SLACK_SECRET}}{literal}"),
        ] {
            let config = OAuthConfig {
                client_id: Some("1234.5678".into()),
                client_secret: Some(secret),
                ..OAuthConfig::default()
            };
            let shown = format!("{config:?} {config:#?}");
            assert!(!shown.contains(literal), "{shown}");
            assert!(
                shown.contains("1234.5678") && shown.contains("[redacted]"),
                "{shown}"
            );
        }
        let placeholder = OAuthConfig {
            client_secret: Some("${SLACK_CLIENT_SECRET}".into()),
            ..OAuthConfig::default()
        };
        assert!(format!("{placeholder:?}").contains("${SLACK_CLIENT_SECRET}"));
    }

    fn entry(transport: Transport, oauth: Option<OAuthConfig>) -> ServerEntry {
        ServerEntry {
            name: ServerName("x".into()),
            title: None,
            description: None,
            transport,
            oauth,
            unavailable: None,
            enabled: None,
            timeout_ms: None,
            retry: None,
            source: "t.json".into(),
        }
    }

    fn map(pairs: &[(&str, &str)]) -> IndexMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn unavailable_declares_only_non_blank_strings() {
        assert_eq!(normalize_unavailable(&json!(null)), None);
        assert_eq!(normalize_unavailable(&json!("")), None);
        assert_eq!(normalize_unavailable(&json!(" \n\t ")), None);
        assert_eq!(normalize_unavailable(&json!(123)), None);
        assert_eq!(normalize_unavailable(&json!(true)), None);
        assert_eq!(normalize_unavailable(&json!(["down"])), None);
        assert_eq!(normalize_unavailable(&json!({"reason": "down"})), None);
        assert_eq!(
            normalize_unavailable(&json!("  Static tokens only. ")).as_deref(),
            Some("Static tokens only.")
        );
    }

    #[test]
    fn unavailable_escapes_control_characters() {
        assert_eq!(
            normalize_unavailable(&json!("Down\u{1b}[2J for\u{9b}now")).as_deref(),
            Some("Down\\u{1b}[2J for\\u{9b}now")
        );
    }

    #[test]
    fn unavailable_collapses_whitespace() {
        assert_eq!(
            normalize_unavailable(&json!("No OAuth\n\ndiscovery;\r\n  static\ttokens only."))
                .as_deref(),
            Some("No OAuth discovery; static tokens only.")
        );
    }

    #[test]
    fn unavailable_truncates_at_200_chars() {
        let long = "a".repeat(300);
        assert_eq!(
            normalize_unavailable(&json!(long)).unwrap(),
            "a".repeat(200)
        );
        let exact = "b".repeat(200);
        assert_eq!(normalize_unavailable(&json!(exact)).unwrap(), exact);
    }

    #[test]
    fn unavailable_truncates_multibyte_text_by_chars() {
        // 300 three-byte chars: a byte cut at 200 would split one; a char cut keeps 200 of them.
        let long = "€".repeat(300);
        let cut = normalize_unavailable(&json!(long)).unwrap();
        assert_eq!(cut.chars().count(), 200);
        assert_eq!(cut, "€".repeat(200));
        let emoji = format!("{}😀😀", "x".repeat(199));
        assert_eq!(
            normalize_unavailable(&json!(emoji)).unwrap(),
            format!("{}😀", "x".repeat(199))
        );
    }

    #[test]
    fn unavailable_cut_leaves_no_trailing_space() {
        let text = format!("{} tail", "w".repeat(199));
        assert_eq!(
            normalize_unavailable(&json!(text)).unwrap(),
            "w".repeat(199)
        );
    }

    #[test]
    fn oauth_capability_follows_static_credential_headers() {
        let plain = entry(
            Transport::StreamableHttp {
                url: "https://a/mcp".into(),
                headers: map(&[("X-Request-Id", "1")]),
            },
            None,
        );
        assert!(plain.is_oauth_capable());
        assert!(plain.static_credential_headers().is_empty());

        let token = entry(
            Transport::Sse {
                url: "https://a/sse".into(),
                headers: map(&[("Accept", "x"), ("X-API-Key", "${K}")]),
            },
            None,
        );
        assert_eq!(token.static_credential_headers(), vec!["X-API-Key"]);
        assert!(!token.is_oauth_capable());

        let stdio = entry(
            Transport::Stdio {
                command: "npx".into(),
                args: vec![],
                env: IndexMap::new(),
            },
            None,
        );
        assert!(!stdio.is_oauth_capable());
        assert_eq!(stdio.display_title(), "x");
    }

    #[test]
    fn variable_uses_name_every_field() {
        let stdio = entry(
            Transport::Stdio {
                command: "${BIN:-npx}".into(),
                args: vec!["-y".into(), "pkg".into(), "${ROOT:-.}".into()],
                env: map(&[("GITHUB_TOKEN", "${GITHUB_TOKEN}"), ("PLAIN", "1")]),
            },
            None,
        );
        let uses: Vec<(String, bool, String)> = stdio
            .variable_uses()
            .into_iter()
            .map(|u| (u.name, u.has_default, u.field))
            .collect();
        assert_eq!(
            uses,
            vec![
                ("BIN".into(), true, "command".into()),
                ("ROOT".into(), true, "args[2]".into()),
                ("GITHUB_TOKEN".into(), false, "env.GITHUB_TOKEN".into()),
            ]
        );

        let remote = entry(
            Transport::StreamableHttp {
                url: "https://${HOST}/mcp".into(),
                headers: map(&[("Authorization", "Bearer ${TOKEN} ${TOKEN}")]),
            },
            Some(OAuthConfig {
                client_id: Some("${CID}".into()),
                client_secret: Some("${SLACK_CLIENT_SECRET}".into()),
                redirect_uri: Some("http://localhost:${PORT:-3118}/callback".into()),
                ..OAuthConfig::default()
            }),
        );
        let fields: Vec<(String, String)> = remote
            .variable_uses()
            .into_iter()
            .map(|u| (u.name, u.field))
            .collect();
        assert_eq!(
            fields,
            vec![
                ("HOST".into(), "url".into()),
                ("TOKEN".into(), "headers.Authorization".into()),
                ("CID".into(), "oauth.clientId".into()),
                ("SLACK_CLIENT_SECRET".into(), "oauth.clientSecret".into()),
                ("PORT".into(), "oauth.redirectUri".into()),
            ]
        );
    }
}
