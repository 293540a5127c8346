//! `WWW-Authenticate` header values, as an MCP server's 401 sends them.
#![no_main]

use libfuzzer_sys::fuzz_target;
use patchbay_oauth::discovery::parse_www_authenticate;

fuzz_target!(|data: &[u8]| {
    let header = patchbay_fuzz::text(data);
    let _ = parse_www_authenticate(&header);
});
