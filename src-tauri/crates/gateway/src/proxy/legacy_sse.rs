//! A legacy HTTP+SSE connector through `/mcp/NAME`: its stream's `endpoint` event rewritten to
//! come back through the gateway (`/mcp/NAME/message?to=PATH`), and where such a message may go
//! (PATH on the connector's own server only).

use super::*;

/// The upstream URL a `/mcp/NAME/message?to=PATH` request goes to: PATH on the connector's own
/// server, nowhere else (the gateway must not become a way to send its credential elsewhere).
pub(super) fn message_target(upstream: &str, query: Option<&str>) -> Option<String> {
    let to = url::form_urlencoded::parse(query?.as_bytes())
        .find(|(k, _)| k == "to")
        .map(|(_, v)| v.into_owned())?;
    if !to.starts_with('/') || to.starts_with("//") {
        return None;
    }
    let base = url::Url::parse(upstream).ok()?;
    let target = base.join(&to).ok()?;
    (target.origin() == base.origin()).then(|| target.to_string())
}

/// How a legacy SSE stream's `endpoint` event is rewritten to come back through the gateway.
pub(super) struct EndpointRewrite {
    pub(super) upstream: String,
    pub(super) connector: String,
}

impl EndpointRewrite {
    /// `data` (the endpoint, relative to the stream's URL) as `/mcp/NAME/message?to=PATH`; `None`
    /// when it points off the connector's server (then the event is dropped: the client cannot
    /// post there with Patchbay's credential, and must not post there without it).
    fn endpoint(&self, data: &str) -> Option<String> {
        let base = url::Url::parse(&self.upstream).ok()?;
        let target = base.join(data.trim()).ok()?;
        if target.origin() != base.origin() {
            return None;
        }
        let mut path = target.path().to_owned();
        if let Some(q) = target.query() {
            path.push('?');
            path.push_str(q);
        }
        let to: String = url::form_urlencoded::byte_serialize(path.as_bytes()).collect();
        Some(format!("/mcp/{}/message?to={to}", self.connector))
    }

    /// One whole event (its lines, no blank line), rewritten when it is the `endpoint` event.
    fn event(&self, event: &str) -> (String, bool) {
        let is_endpoint = event
            .lines()
            .any(|l| l.trim_end() == "event: endpoint" || l.trim_end() == "event:endpoint");
        if !is_endpoint {
            return (event.to_owned(), false);
        }
        let data: Vec<&str> = event
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(|d| d.strip_prefix(' ').unwrap_or(d))
            .collect();
        match self.endpoint(&data.join("\n")) {
            Some(endpoint) => (format!("event: endpoint\ndata: {endpoint}"), true),
            None => {
                tracing::warn!(
                    connector = self.connector,
                    "dropped an SSE endpoint event that points off the connector's server"
                );
                (String::new(), true)
            }
        }
    }
}

/// `upstream`'s legacy SSE stream (`stream`, as the connector `connector`'s SSE URL answered it)
/// as the gateway hands it on: the `endpoint` event rewritten to `/mcp/CONNECTOR/message?to=PATH`
/// (dropped when it points off the connector's server), everything after it as is.
pub fn rewrite_endpoint_events<S>(
    upstream: &str,
    connector: &str,
    stream: S,
) -> impl futures_core::Stream<Item = Result<Bytes, std::io::Error>> + Send
where
    S: futures_core::Stream<Item = Result<Bytes, reqwest::Error>> + Send + 'static,
{
    EndpointRewriter::new(
        stream,
        EndpointRewrite {
            upstream: upstream.to_owned(),
            connector: connector.to_owned(),
        },
    )
}

/// The longest unfinished event a legacy SSE stream may hold before its `endpoint` event (the
/// first event a server sends): past it the stream is no such stream (a blank line never came,
/// or its lines end in CR alone), and buffering it would grow without bound.
const MAX_BEFORE_ENDPOINT: usize = 64 * 1024;

/// How many bytes at the end of `bytes` start a UTF-8 character that is not complete yet (the
/// chunk boundary cut it).
fn incomplete_utf8_tail(bytes: &[u8]) -> usize {
    for back in 1..=bytes.len().min(3) {
        let b = bytes[bytes.len() - back];
        if b & 0xC0 != 0x80 {
            let needs = match b {
                0xC0..=0xDF => 2,
                0xE0..=0xEF => 3,
                0xF0..=0xF7 => 4,
                _ => 1,
            };
            return if needs > back { back } else { 0 };
        }
    }
    0
}

/// A legacy SSE stream with its `endpoint` event rewritten; everything after it passes as is.
pub(super) struct EndpointRewriter {
    inner:
        std::pin::Pin<Box<dyn futures_core::Stream<Item = Result<Bytes, reqwest::Error>> + Send>>,
    rewrite: EndpointRewrite,
    /// Bytes of the events before the endpoint event that are not complete yet.
    pending: Vec<u8>,
    done: bool,
}

impl EndpointRewriter {
    pub(super) fn new<S>(stream: S, rewrite: EndpointRewrite) -> EndpointRewriter
    where
        S: futures_core::Stream<Item = Result<Bytes, reqwest::Error>> + Send + 'static,
    {
        EndpointRewriter {
            inner: Box::pin(stream),
            rewrite,
            pending: Vec::new(),
            done: false,
        }
    }
}

/// A stream that has ended.
struct Ended<T>(std::marker::PhantomData<T>);

impl<T> futures_core::Stream for Ended<T> {
    type Item = T;
    fn poll_next(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<T>> {
        std::task::Poll::Ready(None)
    }
}

impl futures_core::Stream for EndpointRewriter {
    type Item = Result<Bytes, std::io::Error>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        use std::task::Poll;
        let this = &mut *self;
        loop {
            let ended = match this.inner.as_mut().poll_next(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) if this.pending.is_empty() => return Poll::Ready(None),
                Poll::Ready(None) => {
                    // The stream ended inside an event: read what came (its last CR ends a
                    // line: the event may be whole), hand on the rest, then end.
                    this.inner = Box::pin(Ended(std::marker::PhantomData));
                    true
                }
                Poll::Ready(Some(Err(e))) => {
                    return Poll::Ready(Some(Err(std::io::Error::other(e))))
                }
                Poll::Ready(Some(Ok(chunk))) if this.done => return Poll::Ready(Some(Ok(chunk))),
                Poll::Ready(Some(Ok(chunk))) => {
                    this.pending.extend_from_slice(&chunk);
                    false
                }
            };
            // A character the chunk boundary cut, or a CR whose LF may come next, waits for
            // the next chunk (decoded or normalized now, it would read differently).
            let held = match incomplete_utf8_tail(&this.pending) {
                _ if ended => 0,
                0 if this.pending.last() == Some(&b'\r') => 1,
                n => n,
            };
            let tail = this.pending.split_off(this.pending.len() - held);
            // Line ends as `\n` from here on (SSE ends lines with `\r\n`, `\n` or `\r`).
            let text = String::from_utf8_lossy(&this.pending)
                .replace("\r\n", "\n")
                .replace('\r', "\n");
            let mut out = String::new();
            let mut rest = text.as_str();
            while let Some(end) = rest.find("\n\n") {
                let (event, was_endpoint) = this.rewrite.event(&rest[..end]);
                // A dropped endpoint event (off the connector's server) ends nothing: the next
                // one is rewritten or dropped too, never passed on as it came.
                let rewritten = was_endpoint && !event.is_empty();
                if !event.is_empty() {
                    out.push_str(&event);
                    out.push_str("\n\n");
                }
                rest = &rest[end + 2..];
                if rewritten {
                    this.done = true;
                    break;
                }
            }
            let rest = rest.to_owned();
            let mut out = out.into_bytes();
            if this.done || ended {
                out.extend_from_slice(rest.as_bytes());
                out.extend_from_slice(&tail);
                this.pending.clear();
            } else {
                this.pending = rest.into_bytes();
                this.pending.extend_from_slice(&tail);
                if this.pending.len() > MAX_BEFORE_ENDPOINT {
                    this.inner = Box::pin(Ended(std::marker::PhantomData));
                    this.pending = Vec::new();
                    return Poll::Ready(Some(Err(std::io::Error::other(format!(
                        "the upstream sent an event of more than {MAX_BEFORE_ENDPOINT} bytes before its endpoint event"
                    )))));
                }
            }
            if !out.is_empty() {
                return Poll::Ready(Some(Ok(Bytes::from(out))));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewriter(chunks: Vec<&'static str>) -> EndpointRewriter {
        let items: Vec<Result<Bytes, reqwest::Error>> =
            chunks.into_iter().map(|c| Ok(Bytes::from(c))).collect();
        EndpointRewriter {
            inner: Box::pin(Iter(items.into_iter())),
            rewrite: EndpointRewrite {
                upstream: "https://mcp.example.com/sse".into(),
                connector: "legacy".into(),
            },
            pending: Vec::new(),
            done: false,
        }
    }

    struct Iter<I>(I);

    impl<I: Iterator + Unpin> futures_core::Stream for Iter<I> {
        type Item = I::Item;
        fn poll_next(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Option<I::Item>> {
            std::task::Poll::Ready(self.0.next())
        }
    }

    fn collect(mut stream: EndpointRewriter) -> String {
        use futures_core::Stream;
        let waker = std::task::Waker::noop();
        let mut cx = std::task::Context::from_waker(waker);
        let mut out = String::new();
        while let std::task::Poll::Ready(Some(chunk)) =
            std::pin::Pin::new(&mut stream).poll_next(&mut cx)
        {
            out.push_str(std::str::from_utf8(&chunk.unwrap()).unwrap());
        }
        out
    }

    #[test]
    fn the_endpoint_event_is_rewritten_across_chunks_and_the_rest_passes() {
        let out = collect(rewriter(vec![
            ": hello\r\n\r\nevent: endp",
            "oint\r\ndata: /messages?sessionId=a b\r\n\r\nevent: message\ndata: {}\n\n",
            "event: endpoint\ndata: /not-rewritten\n\n",
        ]));
        assert_eq!(
            out,
            ": hello\n\nevent: endpoint\ndata: /mcp/legacy/message?to=%2Fmessages%3FsessionId%3Da%2520b\n\nevent: message\ndata: {}\n\nevent: endpoint\ndata: /not-rewritten\n\n"
        );
        let to = message_target(
            "https://mcp.example.com/sse",
            Some("to=%2Fmessages%3FsessionId%3Da%2520b"),
        );
        assert_eq!(
            to.as_deref(),
            Some("https://mcp.example.com/messages?sessionId=a%20b")
        );
    }

    /// Every item of `stream`, polled to its end.
    fn items(
        stream: impl futures_core::Stream<Item = Result<Bytes, std::io::Error>>,
    ) -> Vec<Result<Bytes, std::io::Error>> {
        let mut stream = std::pin::pin!(stream);
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        let mut out = Vec::new();
        while let std::task::Poll::Ready(Some(item)) = stream.as_mut().poll_next(&mut cx) {
            out.push(item);
        }
        out
    }

    fn chunks(parts: Vec<Vec<u8>>) -> Iter<std::vec::IntoIter<Result<Bytes, reqwest::Error>>> {
        Iter(
            parts
                .into_iter()
                .map(|p| Ok(Bytes::from(p)))
                .collect::<Vec<_>>()
                .into_iter(),
        )
    }

    /// A character cut by a chunk boundary before the endpoint event came out as U+FFFD (found
    /// writing fuzz/fuzz_targets/gateway_endpoint_rewrite.rs, which cuts streams everywhere).
    #[test]
    fn a_character_split_across_chunks_passes_intact() {
        let stream = ": h\u{e9}llo\n\nevent: endpoint\ndata: /m\n\n".as_bytes();
        let at = stream.iter().position(|b| *b == 0xC3).unwrap() + 1;
        let out: Vec<u8> = items(rewrite_endpoint_events(
            "https://mcp.example.com/sse",
            "legacy",
            chunks(vec![stream[..at].to_vec(), stream[at..].to_vec()]),
        ))
        .into_iter()
        .flat_map(|item| item.unwrap().to_vec())
        .collect();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            ": h\u{e9}llo\n\nevent: endpoint\ndata: /mcp/legacy/message?to=%2Fm\n\n"
        );
    }

    /// After an endpoint event off the connector's server was dropped, the next one passed on as
    /// it came, and the client would post there (found by
    /// fuzz/fuzz_targets/gateway_endpoint_rewrite.rs).
    #[test]
    fn every_endpoint_off_the_server_is_dropped_until_one_is_rewritten() {
        let out = collect(rewriter(vec![
            "event: endpoint\ndata: https://evil.example/a\n\n",
            "event: endpoint\ndata: https://evil.example/b\n\n",
            "event: endpoint\ndata: /m\n\nevent: endpoint\ndata: /later\n\n",
        ]));
        assert_eq!(
            out,
            "event: endpoint\ndata: /mcp/legacy/message?to=%2Fm\n\nevent: endpoint\ndata: /later\n\n"
        );
    }

    /// A stream ending in the CR that ends its endpoint event: the event is whole (an SSE client
    /// dispatches it), so it is rewritten like any other, not handed on as it came (found by
    /// fuzz/fuzz_targets/gateway_endpoint_rewrite.rs).
    #[test]
    fn an_endpoint_event_ended_by_the_streams_last_cr_is_rewritten() {
        let out = collect(rewriter(vec![
            "event: endpoint\ndata: https://evil.example/a\n\r",
        ]));
        assert_eq!(out, "");
        let out = collect(rewriter(vec!["event: endpoint\rdata: /m\r", "\r"]));
        assert_eq!(
            out,
            "event: endpoint\ndata: /mcp/legacy/message?to=%2Fm\n\n"
        );
    }

    /// Lone CRs end lines too, and how many line ends a run of CRs makes did not depend on where
    /// the chunks were cut (found by fuzz/fuzz_targets/gateway_endpoint_rewrite.rs: `\r\r\r\n`
    /// came out as `\r\r\n`, `\r\n` or `\n`, so the client saw other events).
    #[test]
    fn cr_line_ends_read_alike_however_the_stream_is_cut() {
        let stream = b": hello\r\r\r\nevent: endpoint\rdata: /m\r\r";
        // Three line ends after the comment: its event, then an empty line (dispatches nothing).
        let expected = ": hello\n\nevent: endpoint\ndata: /mcp/legacy/message?to=%2Fm\n\n";
        for cut in 1..stream.len() {
            let out: Vec<u8> = items(rewrite_endpoint_events(
                "https://mcp.example.com/sse",
                "legacy",
                chunks(vec![stream[..cut].to_vec(), stream[cut..].to_vec()]),
            ))
            .into_iter()
            .flat_map(|item| item.unwrap().to_vec())
            .collect();
            assert_eq!(String::from_utf8(out).unwrap(), expected, "cut at {cut}");
        }
    }

    /// A stream whose first event never ends (no blank line, or lines ending in CR alone) was
    /// buffered whole, without bound; past the limit it is an error.
    #[test]
    fn an_endless_first_event_is_an_error_not_unbounded_buffering() {
        let line = vec![b'x'; 16 * 1024];
        let parts = vec![line; 8];
        let out = items(rewrite_endpoint_events(
            "https://mcp.example.com/sse",
            "legacy",
            chunks(parts),
        ));
        let last = out.last().expect("an item");
        assert!(last.is_err(), "{out:?}");
        assert!(
            out.len() <= 5,
            "it stopped reading at the limit: {} items",
            out.len()
        );
    }

    #[test]
    fn an_endpoint_off_the_connectors_server_goes_nowhere() {
        let out = collect(rewriter(vec![
            "event: endpoint\ndata: https://evil.example/messages\n\n",
        ]));
        assert_eq!(out, "");
        for to in [
            "%2F%2Fevil.example%2Fx",
            "https%3A%2F%2Fevil.example%2F",
            "x",
        ] {
            assert_eq!(
                message_target("https://mcp.example.com/sse", Some(&format!("to={to}"))),
                None,
                "{to}"
            );
        }
    }
}
