//! What a check connects to, already resolved: the URL and header values with every `${VAR}`
//! expanded and the stored bearer token added, or the stdio command with its environment. Values
//! are [`Secret`]s, so `Debug` and logs show names only; [`Redactor`] scrubs them out of any
//! message a server or a library hands back.

use patchbay_vault::Secret;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// The three ways to reach an MCP server, spelled as the catalog and `status --json` spell them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "kebab-case")]
pub enum TransportKind {
    StreamableHttp,
    Sse,
    Stdio,
}

impl TransportKind {
    /// `streamable-http`, `sse` or `stdio`.
    pub fn as_str(self) -> &'static str {
        match self {
            TransportKind::StreamableHttp => "streamable-http",
            TransportKind::Sse => "sse",
            TransportKind::Stdio => "stdio",
        }
    }

    /// How people name it: "streamable HTTP", "SSE", "stdio".
    pub fn label(self) -> &'static str {
        match self {
            TransportKind::StreamableHttp => "streamable HTTP",
            TransportKind::Sse => "SSE",
            TransportKind::Stdio => "stdio",
        }
    }

    /// The other HTTP transport, for the fallback; none for stdio.
    pub fn other_http(self) -> Option<TransportKind> {
        match self {
            TransportKind::StreamableHttp => Some(TransportKind::Sse),
            TransportKind::Sse => Some(TransportKind::StreamableHttp),
            TransportKind::Stdio => None,
        }
    }

    pub fn parse(text: &str) -> Option<TransportKind> {
        match text {
            "streamable-http" | "http" => Some(TransportKind::StreamableHttp),
            "sse" => Some(TransportKind::Sse),
            "stdio" => Some(TransportKind::Stdio),
            _ => None,
        }
    }
}

impl std::fmt::Display for TransportKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A remote server: its URL and the headers to send, values resolved.
#[derive(Clone)]
pub struct HttpEndpoint {
    pub url: String,
    /// In catalog order; an OAuth bearer token arrives here as `Authorization`.
    pub headers: Vec<(String, Secret)>,
}

impl std::fmt::Debug for HttpEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("HttpEndpoint")
            .field("url", &self.url)
            .field("headers", &names)
            .finish()
    }
}

/// A stdio server: started as the runtime would start it (the command, its arguments, the
/// entry's environment over Patchbay's own), then stopped.
#[derive(Clone)]
pub struct StdioLaunch {
    pub command: String,
    /// Resolved; an argument may carry a secret (`--api-key=${KEY}`), hence `Secret`.
    pub args: Vec<Secret>,
    pub env: Vec<(String, Secret)>,
    /// Where the child runs; the current directory when `None`.
    pub cwd: Option<PathBuf>,
}

impl std::fmt::Debug for StdioLaunch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.env.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("StdioLaunch")
            .field("command", &self.command)
            .field("args", &self.args.len())
            .field("env", &names)
            .field("cwd", &self.cwd)
            .finish()
    }
}

/// The transport to try, with what it needs.
#[derive(Debug, Clone)]
pub enum Endpoint {
    StreamableHttp(HttpEndpoint),
    Sse(HttpEndpoint),
    Stdio(StdioLaunch),
}

impl Endpoint {
    pub fn kind(&self) -> TransportKind {
        match self {
            Endpoint::StreamableHttp(_) => TransportKind::StreamableHttp,
            Endpoint::Sse(_) => TransportKind::Sse,
            Endpoint::Stdio(_) => TransportKind::Stdio,
        }
    }

    /// The same URL and headers over the other HTTP transport; `None` for stdio.
    pub fn other_http(&self) -> Option<Endpoint> {
        match self {
            Endpoint::StreamableHttp(http) => Some(Endpoint::Sse(http.clone())),
            Endpoint::Sse(http) => Some(Endpoint::StreamableHttp(http.clone())),
            Endpoint::Stdio(_) => None,
        }
    }

    /// Every secret value this endpoint carries, for [`Redactor`].
    fn secrets(&self) -> Vec<Secret> {
        match self {
            Endpoint::StreamableHttp(http) | Endpoint::Sse(http) => {
                http.headers.iter().map(|(_, v)| v.clone()).collect()
            }
            Endpoint::Stdio(launch) => launch
                .args
                .iter()
                .cloned()
                .chain(launch.env.iter().map(|(_, v)| v.clone()))
                .collect(),
        }
    }
}

/// How the server expects to be authenticated: decides what a 401 means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthKind {
    /// Remote with no static credential header: Patchbay can run OAuth for it. A 401 means
    /// Needs authorization.
    OAuth {
        /// Whether a stored access token was sent (a 401 then means it was refused).
        token_sent: bool,
    },
    /// A static credential in headers: a 401 names them and the `${VAR}`s behind them, and
    /// never offers Authorize.
    StaticHeaders {
        headers: Vec<String>,
        variables: Vec<String>,
    },
    /// stdio: credentials, if any, travel in the environment; HTTP statuses do not apply.
    Process,
}

/// One connector's check: whom to call, how, and what a 401 means.
#[derive(Debug, Clone)]
pub struct CheckTarget {
    /// The catalog name; tools are reported as `<connector>.<tool>`.
    pub connector: String,
    pub endpoint: Endpoint,
    pub auth: AuthKind,
    /// Secrets resolved for this entry that appear nowhere in `endpoint` (a variable used only
    /// in the URL): scrubbed from messages too.
    pub extra_secrets: Vec<Secret>,
    /// The entry's `timeout_ms`: the limit on each request of the handshake, in place of the
    /// caller's (see [`crate::Timeouts::limited_to`]); `None` keeps the caller's.
    pub request_timeout: Option<std::time::Duration>,
    /// The entry's `retry`: a passing failure is tried again on the same transport; `None` is
    /// one try per transport.
    pub retry: Option<crate::RetryPolicy>,
}

impl CheckTarget {
    /// Scrubs every secret value of this target out of a message.
    pub fn redactor(&self) -> Redactor {
        let mut secrets = self.endpoint.secrets();
        secrets.extend(self.extra_secrets.iter().cloned());
        Redactor::new(secrets)
    }
}

/// Replaces secret values with `[redacted]` in text that came back from a server or a library
/// (an error that quotes a URL with a key in its query, a header echoed in a body).
#[derive(Clone, Default)]
pub struct Redactor {
    secrets: Vec<Secret>,
}

/// Shorter values are too likely to be ordinary words ("1", "true") to be worth replacing.
const REDACT_MIN_LEN: usize = 4;

impl Redactor {
    pub fn new(secrets: Vec<Secret>) -> Redactor {
        let mut secrets: Vec<Secret> = secrets
            .into_iter()
            .filter(|s| s.expose().len() >= REDACT_MIN_LEN)
            .collect();
        // Longest first, so a token that contains another is replaced whole.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.expose().len()));
        let mut secrets_with_bearer = Vec::with_capacity(secrets.len() * 2);
        for s in secrets {
            // `Bearer <token>` is replaced by the token's own entry; the value alone too.
            if let Some(token) = s.expose().strip_prefix("Bearer ") {
                if token.len() >= REDACT_MIN_LEN {
                    secrets_with_bearer.push(Secret::new(token.to_owned()));
                }
            }
            secrets_with_bearer.push(s);
        }
        secrets_with_bearer.sort_by_key(|s| std::cmp::Reverse(s.expose().len()));
        Redactor {
            secrets: secrets_with_bearer,
        }
    }

    pub fn scrub(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for s in &self.secrets {
            if out.contains(s.expose()) {
                out = out.replace(s.expose(), "[redacted]");
            }
        }
        out
    }
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Redactor({} values)", self.secrets.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_shows_names_never_values() {
        let target = CheckTarget {
            connector: "x".into(),
            endpoint: Endpoint::StreamableHttp(HttpEndpoint {
                url: "http://127.0.0.1:1/mcp".into(),
                headers: vec![("Authorization".into(), Secret::new("Bearer s3cr3t-token"))],
            }),
            auth: AuthKind::OAuth { token_sent: true },
            extra_secrets: vec![],
            request_timeout: None,
            retry: None,
        };
        let debug = format!("{target:?}");
        assert!(debug.contains("Authorization"), "{debug}");
        assert!(!debug.contains("s3cr3t"), "{debug}");
        let launch = StdioLaunch {
            command: "npx".into(),
            args: vec![Secret::new("--key=hunter22")],
            env: vec![("TOKEN".into(), Secret::new("hunter22"))],
            cwd: None,
        };
        let debug = format!("{launch:?}");
        assert!(!debug.contains("hunter22"), "{debug}");
        assert!(debug.contains("TOKEN"), "{debug}");
    }

    #[test]
    fn redactor_scrubs_bearer_tokens_and_values() {
        let target = CheckTarget {
            connector: "x".into(),
            endpoint: Endpoint::Sse(HttpEndpoint {
                url: "http://h/sse".into(),
                headers: vec![
                    ("Authorization".into(), Secret::new("Bearer abcd1234")),
                    ("X-Flag".into(), Secret::new("1")),
                ],
            }),
            auth: AuthKind::OAuth { token_sent: true },
            extra_secrets: vec![Secret::new("query-key-9")],
            request_timeout: None,
            retry: None,
        };
        let r = target.redactor();
        assert_eq!(
            r.scrub("token abcd1234 at http://h/sse?k=query-key-9, flag 1"),
            "token [redacted] at http://h/sse?k=[redacted], flag 1"
        );
    }

    #[test]
    fn transport_names_round_trip() {
        for t in [
            TransportKind::StreamableHttp,
            TransportKind::Sse,
            TransportKind::Stdio,
        ] {
            assert_eq!(TransportKind::parse(t.as_str()), Some(t));
            assert_eq!(
                serde_json::to_value(t).unwrap(),
                serde_json::json!(t.as_str())
            );
        }
        assert_eq!(
            TransportKind::parse("http"),
            Some(TransportKind::StreamableHttp)
        );
        assert_eq!(
            TransportKind::StreamableHttp.other_http(),
            Some(TransportKind::Sse)
        );
        assert_eq!(TransportKind::Stdio.other_http(), None);
    }
}
