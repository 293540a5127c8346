//! The `${VAR}` / `${VAR:-default}` placeholder language: finding, checking and expanding, with
//! the spans it reports checked against the text.
#![no_main]

use libfuzzer_sys::fuzz_target;
use patchbay_catalog::placeholder::{check, expand, placeholders};

fuzz_target!(|data: &[u8]| {
    let text = patchbay_fuzz::text(data);
    let found = placeholders(&text);
    let mut last_end = 0;
    for p in &found {
        // Spans are in order, on character boundaries, and cover `${...}`.
        assert!(p.span.start >= last_end && p.span.end <= text.len());
        let whole = &text[p.span.clone()];
        assert!(whole.starts_with("${") && whole.ends_with('}'), "{whole:?}");
        assert!(whole.contains(p.name.as_str()));
        last_end = p.span.end;
    }
    let _ = check(&text).map_err(|e| e.to_string());
    // Every variable set: nothing is missing.
    let all_set = expand(&text, &|name| Some(format!("<{name}>")));
    assert!(all_set.is_ok());
    // Nothing set: exactly the placeholders without a default are missing.
    match expand(&text, &|_| None) {
        Ok(_) => assert!(found.iter().all(|p| p.default.is_some())),
        Err(missing) => {
            assert!(!missing.is_empty());
            for name in &missing {
                assert!(found.iter().any(|p| &p.name == name && p.default.is_none()));
            }
        }
    }
});
