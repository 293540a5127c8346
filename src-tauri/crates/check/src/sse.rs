//! An incremental `text/event-stream` parser, the one Patchbay has: the connection check's legacy
//! HTTP+SSE client (`legacy_sse`) reads its stream with it, and so do the gateway's bridges and
//! its aggregate.

/// One Server-Sent Event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// `event:`, `message` when absent.
    pub kind: String,
    /// The `data:` lines joined by newlines (empty for an event that only set `id` or
    /// `retry`).
    pub data: String,
    /// The last event id so far (it carries over).
    pub id: Option<String>,
    /// The event's `retry:` (ms), the wait the server asks for before a reconnection.
    pub retry: Option<u64>,
}

/// The most an event may hold (its pending line and data) before the stream is given up: far
/// above any MCP message, and a stop to a server that never ends a line or an event.
pub const MAX_SSE_EVENT_BYTES: usize = 32 * 1024 * 1024;

/// An event grew past the parser's limit; the stream is not usable any more.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the server's event stream sent an event over {limit} bytes without ending it")]
pub struct SseEventTooLarge {
    pub limit: usize,
}

/// An incremental `text/event-stream` parser (the WHATWG rules the MCP transports use: lines end
/// in CRLF, LF or CR; `:` starts a comment; a blank line dispatches), holding at most
/// [`MAX_SSE_EVENT_BYTES`] of one event. One departure: a block that sets `id` or `retry` with no
/// data is dispatched too (its data empty), because resumption needs both (SEP-1699's priming
/// event is exactly that); readers of messages skip empty data.
#[derive(Debug)]
pub struct SseParser {
    limit: usize,
    buffer: Vec<u8>,
    /// The last chunk ended in CR: a LF starting the next one belongs to it.
    after_cr: bool,
    data: Option<String>,
    kind: Option<String>,
    id: Option<String>,
    /// This block set `id`.
    new_id: bool,
    retry: Option<u64>,
}

impl Default for SseParser {
    fn default() -> Self {
        SseParser::with_limit(MAX_SSE_EVENT_BYTES)
    }
}

impl SseParser {
    /// A parser holding at most `limit` bytes of one event.
    pub fn with_limit(limit: usize) -> SseParser {
        SseParser {
            limit,
            buffer: Vec::new(),
            after_cr: false,
            data: None,
            kind: None,
            id: None,
            new_id: false,
            retry: None,
        }
    }

    /// Feeds `chunk`; returns the events it completed, or an error once one event (its data so
    /// far and its unfinished line) holds more than the limit.
    pub fn push(&mut self, chunk: &[u8]) -> Result<Vec<SseEvent>, SseEventTooLarge> {
        let events = self.push_unbounded(chunk);
        let pending = self.buffer.len() + self.data.as_ref().map_or(0, String::len);
        if pending > self.limit {
            return Err(SseEventTooLarge { limit: self.limit });
        }
        Ok(events)
    }

    fn push_unbounded(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        let mut events = Vec::new();
        let mut bytes = chunk;
        if self.after_cr && bytes.first() == Some(&b'\n') {
            bytes = &bytes[1..];
        }
        self.after_cr = false;
        let mut start = 0;
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] == b'\n' || bytes[i] == b'\r' {
                self.buffer.extend_from_slice(&bytes[start..i]);
                let line = std::mem::take(&mut self.buffer);
                self.line(&String::from_utf8_lossy(&line), &mut events);
                if bytes[i] == b'\r' {
                    if i + 1 < bytes.len() {
                        if bytes[i + 1] == b'\n' {
                            i += 1;
                        }
                    } else {
                        self.after_cr = true;
                    }
                }
                start = i + 1;
            }
            i += 1;
        }
        self.buffer.extend_from_slice(&bytes[start..]);
        events
    }

    fn line(&mut self, line: &str, events: &mut Vec<SseEvent>) {
        if line.is_empty() {
            let data = self.data.take();
            let retry = self.retry.take();
            if data.is_some() || retry.is_some() || self.new_id {
                events.push(SseEvent {
                    kind: self.kind.take().unwrap_or_else(|| "message".into()),
                    data: data.unwrap_or_default(),
                    id: self.id.clone(),
                    retry,
                });
            }
            self.new_id = false;
            self.kind = None;
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "data" => match &mut self.data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => self.data = Some(value.to_owned()),
            },
            "event" => self.kind = Some(value.to_owned()),
            "id" if !value.contains('\0') => {
                self.id = Some(value.to_owned());
                self.new_id = true;
            }
            "retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                self.retry = value.parse().ok();
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_events_split_across_chunks_and_line_endings() {
        let mut parser = SseParser::default();
        let mut events = parser.push(b"event: message\r\nid: 7\r").unwrap();
        events.extend(parser.push(b"\ndata: {\"a\":").unwrap());
        events.extend(
            parser
                .push(b"1}\n\n: keep-alive\n\ndata: x\ndata: y\n")
                .unwrap(),
        );
        assert_eq!(
            events,
            vec![SseEvent {
                kind: "message".into(),
                data: "{\"a\":1}".into(),
                id: Some("7".into()),
                retry: None,
            }]
        );
        let events = parser.push(b"\n").unwrap();
        assert_eq!(events[0].data, "x\ny");
        assert_eq!(
            events[0].id.as_deref(),
            Some("7"),
            "the last id carries over"
        );
    }

    #[test]
    fn an_event_without_data_dispatches_nothing() {
        let mut parser = SseParser::default();
        assert!(parser.push(b"event: ping\n\n").unwrap().is_empty());
        let events = parser.push(b"data:no space\r\n\r\n").unwrap();
        assert_eq!(events[0].data, "no space");
        assert_eq!(
            events[0].kind, "message",
            "the event type does not carry over"
        );
    }

    #[test]
    fn an_event_that_only_sets_id_or_retry_is_dispatched_for_resumption() {
        let mut parser = SseParser::default();
        let events = parser.push(b"id: 1\nretry: 500\n\nretry: x\n\n").unwrap();
        assert_eq!(
            events,
            vec![SseEvent {
                kind: "message".into(),
                data: String::new(),
                id: Some("1".into()),
                retry: Some(500),
            }],
            "a retry that is not a number is ignored"
        );
        let events = parser.push(b"data: {}\n\n").unwrap();
        assert_eq!(
            (events[0].id.as_deref(), events[0].retry),
            (Some("1"), None)
        );
    }

    #[test]
    fn an_event_over_the_limit_is_refused_and_one_under_it_is_not() {
        // A line that never ends.
        let mut parser = SseParser::with_limit(64);
        assert!(parser.push(&[b'x'; 60]).unwrap().is_empty());
        assert_eq!(parser.push(&[b'x'; 5]), Err(SseEventTooLarge { limit: 64 }));
        // Data lines that never dispatch.
        let mut parser = SseParser::with_limit(64);
        for _ in 0..5 {
            parser.push(b"data: 0123456789\n").unwrap();
        }
        assert!(parser.push(b"data: 0123456789\n").is_err());
        // Events that end stay within it, however many.
        let mut parser = SseParser::with_limit(64);
        for _ in 0..1000 {
            let events = parser.push(b"data: 0123456789012345678901234567890123456789\n\n");
            assert_eq!(events.unwrap().len(), 1);
        }
    }
}
