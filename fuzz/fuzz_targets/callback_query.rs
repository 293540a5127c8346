//! The loopback receiver's callback query (strict form decoding of the authorization response).
#![no_main]

use libfuzzer_sys::fuzz_target;
use patchbay_oauth::receiver::parse_query;

fuzz_target!(|data: &[u8]| {
    let query = patchbay_fuzz::text(data);
    if let Ok(params) = parse_query(&query) {
        for value in [
            &params.state,
            &params.code,
            &params.iss,
            &params.error,
            &params.error_description,
        ]
        .into_iter()
        .flatten()
        {
            assert!(!value.is_empty());
            assert!(!value.chars().any(char::is_control), "{value:?}");
        }
    }
});
