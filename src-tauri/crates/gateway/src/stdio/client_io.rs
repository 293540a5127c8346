//! The client's side of the stdio bridge: its lines read and parsed, answers written one per
//! line by a writer thread of its own.

use super::*;

/// What both bridges start with: the request bound, an HTTP client whose connect timeout it
/// bounds, and the stdout writer (where lines go, and its thread).
pub(super) struct BridgeIo {
    pub(super) timeout: Duration,
    pub(super) http: reqwest::Client,
    pub(super) out: mpsc::UnboundedSender<Out>,
    pub(super) writer: JoinHandle<()>,
}

impl BridgeIo {
    pub(super) fn start<C: Credentials, W: Write + Send + 'static>(
        credentials: &C,
        output: W,
    ) -> Result<Self, StdioError> {
        let timeout = credentials.timeout().unwrap_or(DEFAULT_REQUEST_TIMEOUT);
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT.min(timeout))
            .user_agent(concat!("Patchbay/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| StdioError::Client(e.to_string()))?;
        let (out, lines_out) = mpsc::unbounded_channel();
        let writer = tokio::task::spawn_blocking(move || write_lines(output, lines_out));
        Ok(Self {
            timeout,
            http,
            out,
            writer,
        })
    }
}

/// One message to the client: serde_json writes no raw newline, so one message is one line.
pub(super) fn emit_to(out: &mpsc::UnboundedSender<Out>, message: &Value) {
    let line = serde_json::to_string(message).expect("a JSON value serializes");
    let _ = out.send(Out::Line(line));
}

/// Reads the client's messages from `input` until it ends and hands each to `forward`; a line
/// that is not JSON is answered with a parse error. Returns once every forwarded request has
/// finished (each is bounded by the request timeout).
pub(super) async fn read_client<R, F, Fut>(
    input: R,
    out: &mpsc::UnboundedSender<Out>,
    forward: F,
) -> Result<(), StdioError>
where
    R: AsyncRead + Unpin,
    F: Fn(Value, Kind) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let mut lines = BufReader::new(input).lines();
    let mut in_flight = JoinSet::new();
    let read = loop {
        let line = match lines.next_line().await {
            Ok(Some(line)) => line,
            Ok(None) => break Ok(()),
            Err(e) => break Err(StdioError::Stdin(e)),
        };
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let message: Value = match serde_json::from_str(line) {
            Ok(m) => m,
            Err(e) => {
                tracing::warn!("a line on stdin is not JSON ({e}); answered with a parse error");
                emit_to(
                    out,
                    &json!({
                        "jsonrpc": "2.0",
                        "id": null,
                        "error": { "code": -32700, "message": format!("Parse error: {e}") }
                    }),
                );
                continue;
            }
        };
        if !message.is_object() {
            // MCP since 2025-06-18 has no batches, and rmcp's transport cannot carry one: the
            // client is told, rather than left waiting for answers that never come.
            emit_to(out, &not_one_message(&message));
            continue;
        }
        let kind = Kind::of(&message);
        // The handshake goes in order: nothing else may overtake it (the session id comes from
        // the initialize's answer). Everything after runs concurrently, as the client sends it.
        if kind.is_handshake() {
            forward(message, kind).await;
        } else {
            in_flight.spawn(forward(message, kind));
        }
        while in_flight.try_join_next().is_some() {}
    };
    while in_flight.join_next().await.is_some() {}
    read
}

/// The answer to a line that is JSON but not one message (a batch, a bare value).
pub(super) fn not_one_message(message: &Value) -> Value {
    let what = if message.is_array() {
        "a JSON-RPC batch: MCP has no batches since 2025-06-18; send one message per line"
    } else {
        "not a JSON-RPC message: send one JSON object per line"
    };
    json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": { "code": -32600, "message": format!("Invalid Request: {what}") }
    })
}

/// What goes to the stdout writer.
pub(super) enum Out {
    Line(String),
    End,
}

/// The writer: one line per message, flushed at once. A blocking thread of its own, writing to a
/// handle of its own (see [`stdout_handle`]).
pub(super) fn write_lines<W: Write>(mut output: W, mut lines: mpsc::UnboundedReceiver<Out>) {
    while let Some(Out::Line(line)) = lines.blocking_recv() {
        let written = output
            .write_all(line.as_bytes())
            .and_then(|()| output.write_all(b"\n"))
            .and_then(|()| output.flush());
        if let Err(e) = written {
            tracing::warn!("cannot write to stdout (the client went away?): {e}");
            return;
        }
    }
}

/// This process's stdout as a file handle of its own (a duplicate of the descriptor), written
/// without `std::io::Stdout`'s lock, which the CLI's `main` may hold for the whole command.
pub fn stdout_handle() -> std::io::Result<std::fs::File> {
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        Ok(std::fs::File::from(
            std::io::stdout().as_fd().try_clone_to_owned()?,
        ))
    }
    #[cfg(windows)]
    {
        use std::os::windows::io::AsHandle;
        Ok(std::fs::File::from(
            std::io::stdout().as_handle().try_clone_to_owned()?,
        ))
    }
}
