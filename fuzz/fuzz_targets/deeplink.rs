//! `patchbay://` links, alone and among a process's arguments.
#![no_main]

use libfuzzer_sys::fuzz_target;
use patchbay_core::deeplink::{from_args, parse, DeepLink, MAX_NAME_CHARS};

fuzz_target!(|data: &[u8]| {
    let link = patchbay_fuzz::text(data);
    if let Ok(DeepLink::Authorize { connector }) = parse(&link) {
        // Only a catalog name comes out of a link.
        assert!(!connector.is_empty() && connector.len() <= MAX_NAME_CHARS);
        assert!(connector
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'[' | b']' | b'$')));
    }
    let args = patchbay_fuzz::fields(data);
    let _ = from_args(args.iter());
});
