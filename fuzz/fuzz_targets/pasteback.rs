//! Paste-back input: a redirected URL, its bare query, or a bare code, as a user pastes it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use patchbay_oauth::pasteback::parse;

fuzz_target!(|data: &[u8]| {
    let input = patchbay_fuzz::text(data);
    match parse(&input) {
        Ok(params) => {
            assert!(params.code.is_some() || params.error.is_some());
            if let Some(code) = &params.code {
                assert!(!code.chars().any(char::is_control));
            }
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
});
