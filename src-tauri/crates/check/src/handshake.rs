//! One attempt over one transport: the real MCP handshake through rmcp (the official Rust SDK),
//! then `tools/list` page by page, then a clean goodbye (the streamable-HTTP session deleted,
//! the stdio server's stdin closed and its process group stopped). Every stage has its own time
//! limit, and reqwest has a connect limit under it.
//!
//! The revision is negotiated per server, as rmcp's `Auto` lifecycle does it (and the Python
//! SDK's `auto` mode): `server/discover` offering 2026-07-28 first; a server that answers it as
//! a legacy server would (an error, or for HTTP a 4xx to the sessionless POST) gets the
//! `initialize` / `notifications/initialized` handshake at 2025-11-25 instead, and may agree to
//! an older revision there. The legacy HTTP+SSE transport predates discovery and goes straight
//! to `initialize`.

use crate::classify::{self, Context};
use crate::error::{CheckError, Stage};
use crate::legacy_sse::LegacySseTransport;
use crate::{CheckTarget, Endpoint, HttpEndpoint, StdioLaunch, TransportKind};
use rmcp::model::{
    ClientCapabilities, ClientConfig, Implementation, ProtocolVersion, ServerPeerInfo,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RoleClient, RunningService};
use rmcp::transport::common::client_side_sse::NeverRetry;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use serde::Serialize;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::AsyncReadExt;
use tokio::time::timeout;

/// The time limits of one attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// Opening a TCP connection.
    pub connect: Duration,
    /// The handshake on a remote server (`server/discover`, and `initialize` when the server is
    /// a legacy one), from the first byte sent (for SSE, opening the stream
    /// and waiting for its endpoint event is part of it).
    pub initialize: Duration,
    /// The handshake on a stdio server, from spawning it: an `npx -y` server may install first.
    pub stdio_initialize: Duration,
    /// All of `tools/list`, every page.
    pub list_tools: Duration,
    /// How long a stdio server may take to exit once its stdin is closed, before its process
    /// group is killed; also the limit on the streamable-HTTP session's DELETE.
    pub shutdown: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect: Duration::from_secs(5),
            initialize: Duration::from_secs(15),
            // The seed's flat MCP_TIMEOUT is three minutes, for cold npx installs in sessions;
            // a check someone waits on settles for one.
            stdio_initialize: Duration::from_secs(60),
            list_tools: Duration::from_secs(15),
            shutdown: Duration::from_secs(2),
        }
    }
}

impl Timeouts {
    /// These limits with every request of the handshake held to `limit` (a catalog entry's
    /// `timeout_ms`): `initialize` (for stdio, from starting the process) and `tools/list` get
    /// `limit`; opening the connection gets the smaller of `limit` and its own limit; the goodbye
    /// keeps its own, since it is ours and never fails the check.
    pub fn limited_to(self, limit: Duration) -> Timeouts {
        Timeouts {
            connect: self.connect.min(limit),
            initialize: limit,
            stdio_initialize: limit,
            list_tools: limit,
            shutdown: self.shutdown,
        }
    }
}

/// Who answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ServerIdentity {
    pub name: String,
    pub version: String,
    /// The protocol revision negotiated with it (`2026-07-28` through `server/discover`, or
    /// what it agreed to in `initialize`).
    pub protocol_version: String,
}

/// A tool the server offers, named as the agent sees it: `<connector>.<tool>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ToolInfo {
    /// `<connector>.<tool>`, e.g. `notion.search`.
    pub name: String,
    /// The server's own name for it.
    pub tool: String,
    pub title: Option<String>,
    pub description: Option<String>,
}

/// The tool name an agent sees: the connector's name, a dot, the server's tool name.
pub fn qualified_tool_name(connector: &str, tool: &str) -> String {
    format!("{connector}.{tool}")
}

/// A handshake that went through.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Handshake {
    pub transport: TransportKind,
    pub server: ServerIdentity,
    pub tools: Vec<ToolInfo>,
    /// Connect, the handshake and `tools/list`; the goodbye is not counted.
    #[serde(rename = "latency_ms", serialize_with = "as_millis")]
    pub latency: Duration,
}

fn as_millis<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(d.as_millis().try_into().unwrap_or(u64::MAX))
}

/// How much of a stdio server's stderr is kept for the error (the error drawer's 4 KB).
const STDERR_KEEP: usize = 4096;

/// Handshake with `target` over `endpoint` (the target's own, or the fallback's).
pub async fn handshake(
    target: &CheckTarget,
    endpoint: &Endpoint,
    timeouts: &Timeouts,
) -> Result<Handshake, CheckError> {
    match endpoint {
        Endpoint::StreamableHttp(http) => streamable_http(target, http, timeouts).await,
        Endpoint::Sse(http) => sse(target, http, timeouts).await,
        Endpoint::Stdio(launch) => stdio(target, launch, timeouts).await,
    }
}

fn client_config() -> ClientConfig {
    let mut implementation = Implementation::new("patchbay", env!("CARGO_PKG_VERSION"));
    implementation.title = Some("Patchbay connection check".into());
    ClientConfig::new(ClientCapabilities::default(), implementation)
}

/// The revisions offered through `server/discover`, newest first.
fn discover_versions() -> Vec<ProtocolVersion> {
    vec![ProtocolVersion::V_2026_07_28]
}

/// How a transport starts its session. Streamable HTTP and stdio negotiate: `server/discover`
/// first, `initialize` at the newest revision that has it when the server is a legacy one.
/// Legacy SSE only ever had `initialize`.
fn lifecycle(kind: TransportKind) -> ClientLifecycleMode {
    match kind {
        TransportKind::Sse => ClientLifecycleMode::Initialize,
        TransportKind::StreamableHttp | TransportKind::Stdio => negotiated_lifecycle(),
    }
}

/// The negotiation every Patchbay MCP client session opens with (the check's, the gateway
/// aggregate's): `server/discover` offering 2026-07-28, `initialize` at the newest revision that
/// has it for a legacy server.
pub fn negotiated_lifecycle() -> ClientLifecycleMode {
    ClientLifecycleMode::Auto {
        preferred_versions: discover_versions(),
        legacy_version: Some(ProtocolVersion::LATEST_WITH_INITIALIZE),
    }
}

/// A reqwest client that sends the endpoint's headers (marked sensitive) on every request.
fn http_client(http: &HttpEndpoint, timeouts: &Timeouts) -> Result<reqwest::Client, CheckError> {
    use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
    let mut headers = HeaderMap::new();
    for (name, value) in &http.headers {
        let header = HeaderName::from_bytes(name.as_bytes()).map_err(|_| CheckError::Invalid {
            message: format!("{name:?} is not a valid HTTP header name"),
        })?;
        let mut value = HeaderValue::from_str(value.expose()).map_err(|_| CheckError::Invalid {
            message: format!("the {name} header's value is not a valid HTTP header value"),
        })?;
        value.set_sensitive(true);
        headers.append(header, value);
    }
    reqwest::Client::builder()
        .default_headers(headers)
        .connect_timeout(timeouts.connect)
        .build()
        .map_err(|e| CheckError::Invalid {
            message: format!("cannot build the HTTP client: {e}"),
        })
}

fn context<'a>(
    target: &'a CheckTarget,
    redactor: &'a crate::Redactor,
    transport: TransportKind,
    stage: Stage,
    limit: Duration,
) -> Context<'a> {
    Context {
        transport,
        auth: &target.auth,
        redactor,
        stage,
        limit,
    }
}

async fn streamable_http(
    target: &CheckTarget,
    http: &HttpEndpoint,
    timeouts: &Timeouts,
) -> Result<Handshake, CheckError> {
    let kind = TransportKind::StreamableHttp;
    let redactor = target.redactor();
    let client = http_client(http, timeouts)?;
    let mut config = StreamableHttpClientTransportConfig::with_uri(http.url.as_str());
    // One check is one try: a reconnecting stream would hide the failure being looked for.
    config.retry_config = Arc::new(NeverRetry::default());
    // A server that answers `initialize` without a session (stateless 2025 servers) is fine.
    config.allow_stateless = true;
    // Bounds the cancellation POSTs rmcp sends on its own (ours are bounded per stage).
    config.control_request_timeout = timeouts.shutdown;
    let transport = StreamableHttpClientTransport::with_client(client, config);
    let started = Instant::now();
    let running = initialize(target, &redactor, kind, transport, timeouts.initialize).await?;
    finish(target, &redactor, kind, running, started, timeouts).await
}

async fn sse(
    target: &CheckTarget,
    http: &HttpEndpoint,
    timeouts: &Timeouts,
) -> Result<Handshake, CheckError> {
    let kind = TransportKind::Sse;
    let redactor = target.redactor();
    let client = http_client(http, timeouts)?;
    let url = url::Url::parse(&http.url).map_err(|_| CheckError::Invalid {
        message: format!("{:?} is not a URL", redactor.scrub(&http.url)),
    })?;
    let started = Instant::now();
    let cx = context(target, &redactor, kind, Stage::Connect, timeouts.initialize);
    // Opening the stream and waiting for its `endpoint` event. Each POST on it is held to the
    // longest stage's limit; the stages' own limits still apply around them.
    let post_timeout = timeouts.initialize.max(timeouts.list_tools);
    let transport = timeout(
        timeouts.initialize,
        LegacySseTransport::connect(client, &url, post_timeout),
    )
    .await
    .map_err(|_| CheckError::TimedOut {
        transport: kind,
        stage: Stage::Connect,
        after: timeouts.initialize,
    })?
    .map_err(|e| classify::from_transport_error(&e, &cx))?;
    let left = timeouts.initialize.saturating_sub(started.elapsed());
    let running = initialize(target, &redactor, kind, transport, left).await?;
    finish(target, &redactor, kind, running, started, timeouts).await
}

/// The handshake, negotiated as [`lifecycle`] says for `kind`, within `limit` (rmcp's own wait
/// for a silent `server/discover`, 10 s, is inside it).
async fn initialize<T, E, A>(
    target: &CheckTarget,
    redactor: &crate::Redactor,
    kind: TransportKind,
    transport: T,
    limit: Duration,
) -> Result<RunningService<RoleClient, ClientConfig>, CheckError>
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let cx = context(target, redactor, kind, Stage::Initialize, limit);
    timeout(
        limit,
        client_config().serve_with_lifecycle(transport, lifecycle(kind)),
    )
    .await
    .map_err(|_| CheckError::TimedOut {
        transport: kind,
        stage: Stage::Initialize,
        after: limit,
    })?
    .map_err(|e| classify::from_initialize(&e, &cx))
}

/// `tools/list`, then the goodbye.
async fn finish(
    target: &CheckTarget,
    redactor: &crate::Redactor,
    kind: TransportKind,
    running: RunningService<RoleClient, ClientConfig>,
    started: Instant,
    timeouts: &Timeouts,
) -> Result<Handshake, CheckError> {
    let listed = list_tools(target, redactor, kind, &running, timeouts).await;
    let latency = started.elapsed();
    // The goodbye (streamable HTTP deletes its session) is bounded and never fails the check.
    let _ = timeout(timeouts.shutdown, running.cancel()).await;
    let (server, tools) = listed?;
    Ok(Handshake {
        transport: kind,
        server,
        tools,
        latency,
    })
}

async fn list_tools(
    target: &CheckTarget,
    redactor: &crate::Redactor,
    kind: TransportKind,
    running: &RunningService<RoleClient, ClientConfig>,
    timeouts: &Timeouts,
) -> Result<(ServerIdentity, Vec<ToolInfo>), CheckError> {
    let info: Option<Arc<ServerPeerInfo>> = running.peer_info();
    // A 2026-07-28 server need not name itself in `server/discover`: its name stays empty.
    let implementation = info.as_ref().and_then(|i| i.server_info.as_ref());
    let server = ServerIdentity {
        name: implementation.map(|i| i.name.clone()).unwrap_or_default(),
        version: implementation
            .map(|i| i.version.clone())
            .unwrap_or_default(),
        protocol_version: info
            .as_ref()
            .map(|i| i.protocol_version.to_string())
            .unwrap_or_default(),
    };
    // A server that declares no tools capability is not asked (it would answer "method not
    // found"); it offers none.
    let offers_tools = info
        .as_ref()
        .is_some_and(|i| i.capabilities.tools.is_some());
    if !offers_tools {
        return Ok((server, Vec::new()));
    }
    let cx = context(
        target,
        redactor,
        kind,
        Stage::ListTools,
        timeouts.list_tools,
    );
    let tools = timeout(timeouts.list_tools, running.list_all_tools())
        .await
        .map_err(|_| CheckError::TimedOut {
            transport: kind,
            stage: Stage::ListTools,
            after: timeouts.list_tools,
        })?
        .map_err(|e| classify::from_service(&e, &cx))?;
    let tools = tools
        .into_iter()
        .map(|t| ToolInfo {
            name: qualified_tool_name(&target.connector, &t.name),
            tool: t.name.into_owned(),
            title: t.title,
            description: t.description.map(|d| d.into_owned()),
        })
        .collect();
    Ok((server, tools))
}

async fn stdio(
    target: &CheckTarget,
    launch: &StdioLaunch,
    timeouts: &Timeouts,
) -> Result<Handshake, CheckError> {
    use process_wrap::tokio::TokioCommandWrap;

    let kind = TransportKind::Stdio;
    let redactor = target.redactor();
    let mut command = tokio::process::Command::new(&launch.command);
    command
        .args(launch.args.iter().map(|a| a.expose()))
        .envs(launch.env.iter().map(|(k, v)| (k, v.expose())))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    if let Some(cwd) = &launch.cwd {
        command.current_dir(cwd);
    }
    let mut wrapped = TokioCommandWrap::from(command);
    // Its own process group (job object): stopping it stops what it started, npx's node too.
    #[cfg(unix)]
    wrapped.wrap(process_wrap::tokio::ProcessGroup::leader());
    #[cfg(windows)]
    wrapped.wrap(process_wrap::tokio::JobObject);
    wrapped.wrap(process_wrap::tokio::KillOnDrop);

    let started = Instant::now();
    let mut child = wrapped.spawn().map_err(|e| CheckError::SpawnFailed {
        command: launch.command.clone(),
        message: redactor.scrub(&e.to_string()),
    })?;
    let (Some(stdout), Some(stdin)) = (child.stdout().take(), child.stdin().take()) else {
        let _ = Box::into_pin(child.kill()).await;
        return Err(CheckError::SpawnFailed {
            command: launch.command.clone(),
            message: "its standard streams could not be connected".into(),
        });
    };
    let stderr_tail = Arc::new(Mutex::new(Vec::<u8>::new()));
    if let Some(mut stderr) = child.stderr().take() {
        let tail = stderr_tail.clone();
        // Drains stderr so a chatty server never blocks on a full pipe; keeps the last 4 KB.
        tokio::spawn(async move {
            let mut buf = [0u8; 1024];
            while let Ok(n) = stderr.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                let mut tail = tail.lock().unwrap_or_else(|p| p.into_inner());
                tail.extend_from_slice(&buf[..n]);
                let excess = tail.len().saturating_sub(STDERR_KEEP);
                tail.drain(..excess);
            }
        });
    }

    let result = async {
        let running = initialize(
            target,
            &redactor,
            kind,
            (stdout, stdin),
            timeouts.stdio_initialize,
        )
        .await?;
        finish(target, &redactor, kind, running, started, timeouts).await
    }
    .await;

    // The runtime's way to stop a stdio server: stdin closed (rmcp did that on cancel), a
    // moment to exit, then the whole process group killed.
    let exited = timeout(timeouts.shutdown, Box::into_pin(child.wait()))
        .await
        .ok()
        .and_then(Result::ok);
    let _ = child.start_kill();
    let _ = timeout(timeouts.shutdown, Box::into_pin(child.wait())).await;

    match result {
        // A closed pipe during the handshake is the process going away: say how it went.
        Err(CheckError::Unreachable { .. }) => {
            let stderr = {
                let tail = stderr_tail.lock().unwrap_or_else(|p| p.into_inner());
                String::from_utf8_lossy(&tail).into_owned()
            };
            Err(CheckError::Exited {
                code: exited.and_then(|s| s.code()),
                stderr: classify::one_line(&redactor.scrub(last_lines(&stderr, 3)), 500),
            })
        }
        other => other,
    }
}

/// The last `n` non-empty lines of `text`: where a crashing server says why.
fn last_lines(text: &str, n: usize) -> &str {
    let trimmed = text.trim_end();
    let mut start = trimmed.len();
    let mut seen = 0;
    for (i, c) in trimmed.char_indices().rev() {
        if c == '\n' {
            seen += 1;
            if seen == n {
                start = i + 1;
                break;
            }
        }
        start = i;
    }
    &trimmed[start..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_are_named_connector_dot_tool() {
        assert_eq!(qualified_tool_name("notion", "search"), "notion.search");
        assert_eq!(
            qualified_tool_name("github", "create_issue"),
            "github.create_issue"
        );
    }

    #[test]
    fn last_lines_keeps_the_end() {
        assert_eq!(last_lines("a\nb\nc\nd\n", 2), "c\nd");
        assert_eq!(last_lines("only", 3), "only");
        assert_eq!(last_lines("", 3), "");
    }
}
