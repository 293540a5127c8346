//! A legacy SSE stream through the gateway (`/mcp/NAME`): its `endpoint` event rewritten to come
//! back through Patchbay, the rest passed on. The first byte seeds where the stream is cut; the
//! output must not depend on the cuts (line ends and undecodable bytes aside, which SSE and the
//! rewriter normalize), and an endpoint that leaves the connector's server never reaches the
//! client.
#![no_main]

use bytes::Bytes;
use futures_core::Stream;
use libfuzzer_sys::fuzz_target;
use patchbay_gateway::proxy::rewrite_endpoint_events;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

const UPSTREAM: &str = "https://mcp.example.com/sse";

struct Chunks(std::vec::IntoIter<Bytes>);

impl Stream for Chunks {
    type Item = Result<Bytes, reqwest::Error>;
    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Self::Item>> {
        Poll::Ready(self.0.next().map(Ok))
    }
}

/// The rewritten stream as one text (line ends as LF, bytes that are not UTF-8 as U+FFFD: the
/// rewriter normalizes what it reads, not what passes after the endpoint event), and whether
/// it ended in an error.
fn run(parts: Vec<Bytes>) -> (String, bool) {
    let mut stream = pin!(rewrite_endpoint_events(
        UPSTREAM,
        "legacy",
        Chunks(parts.into_iter())
    ));
    let mut cx = Context::from_waker(Waker::noop());
    let mut out = Vec::new();
    let mut failed = false;
    loop {
        match stream.as_mut().poll_next(&mut cx) {
            Poll::Ready(Some(Ok(chunk))) => out.extend_from_slice(&chunk),
            Poll::Ready(Some(Err(_))) => failed = true,
            Poll::Ready(None) => break,
            Poll::Pending => panic!("a stream of ready chunks is never pending"),
        }
    }
    let text = String::from_utf8_lossy(&out)
        .replace("\r\n", "\n")
        .replace('\r', "\n");
    (text, failed)
}

fuzz_target!(|data: &[u8]| {
    let Some((seed, stream)) = patchbay_fuzz::split_selector(data) else {
        return;
    };
    let (whole, whole_failed) = run(vec![Bytes::copy_from_slice(stream)]);
    let step = usize::from(seed % 7) + 1;
    let mut parts = Vec::new();
    let (mut at, mut i) = (0, 0);
    while at < stream.len() {
        let len = ((i * 3 + usize::from(seed)) % step + 1).min(stream.len() - at);
        parts.push(Bytes::copy_from_slice(&stream[at..at + len]));
        at += len;
        i += 1;
    }
    let (chunked, chunked_failed) = run(parts);
    if !whole_failed && !chunked_failed {
        assert_eq!(whole, chunked);
    }
    // The first endpoint event the client sees is the gateway's own, or (after an off-server
    // one was dropped, when the rest passes as is) at least not a way off the server.
    // Only whole events count: one cut off by the end of the stream is never dispatched.
    let whole_events = chunked.rsplit_once("\n\n").map_or("", |(events, _)| events);
    let mut events = whole_events.split("\n\n");
    if let Some(first) = events.find(|e| e.lines().any(|l| l.trim_end() == "event: endpoint")) {
        for data in first.lines().filter_map(|l| l.strip_prefix("data:")) {
            let data = data.trim();
            assert!(
                data.starts_with("/mcp/legacy/message?to=%2F")
                    || !(data.contains("://") || data.starts_with("//") || data.starts_with("\\")),
                "{first:?}"
            );
        }
    }
});
