//! The `text/event-stream` parser the stdio bridge reads upstream answers with: the same events
//! whatever the chunking, and the same refusal of an event over its limit (a small one here, so
//! that the fuzzer reaches it). The first byte seeds where the stream is cut.
#![no_main]

use libfuzzer_sys::fuzz_target;
use patchbay_gateway::stdio::SseParser;

fuzz_target!(|data: &[u8]| {
    let Some((seed, stream)) = patchbay_fuzz::split_selector(data) else {
        return;
    };
    const LIMIT: usize = 512;
    let whole = SseParser::with_limit(LIMIT).push(stream);
    let mut parser = SseParser::with_limit(LIMIT);
    let mut chunked = Vec::new();
    let step = usize::from(seed % 7) + 1;
    let mut at = 0;
    let mut i = 0;
    while at < stream.len() {
        // Cuts of varying size, 1 to `step` bytes, so CR/LF pairs and UTF-8 split too.
        let len = ((i * 3 + usize::from(seed)) % step + 1).min(stream.len() - at);
        match parser.push(&stream[at..at + len]) {
            Ok(events) => chunked.extend(events),
            Err(refused) => {
                // A prefix may hold more of an event than the limit where the whole stream
                // goes on to end it; the other way round is checked below (refused whole, the
                // last piece is refused too: the parser's state is the same).
                assert_eq!(refused.limit, LIMIT);
                return;
            }
        }
        at += len;
        i += 1;
    }
    assert_eq!(whole, Ok(chunked));
});
