//! The `text/event-stream` parser the stdio bridge reads upstream answers with: the same events
//! whatever the chunking. The first byte seeds where the stream is cut.
#![no_main]

use libfuzzer_sys::fuzz_target;
use patchbay_gateway::stdio::SseParser;

fuzz_target!(|data: &[u8]| {
    let Some((seed, stream)) = patchbay_fuzz::split_selector(data) else {
        return;
    };
    let whole = SseParser::default().push(stream);
    let mut parser = SseParser::default();
    let mut chunked = Vec::new();
    let step = usize::from(seed % 7) + 1;
    let mut at = 0;
    let mut i = 0;
    while at < stream.len() {
        // Cuts of varying size, 1 to `step` bytes, so CR/LF pairs and UTF-8 split too.
        let len = ((i * 3 + usize::from(seed)) % step + 1).min(stream.len() - at);
        chunked.extend(parser.push(&stream[at..at + len]));
        at += len;
        i += 1;
    }
    assert_eq!(whole, chunked);
});
