//! The catalog files (both shapes: AIR's flat map and the `mcpServers` wrapper): parsing,
//! schema validation, the entry rules, and each valid entry's credential key.
#![no_main]

use libfuzzer_sys::fuzz_target;
use patchbay_catalog::{parse, CatalogItem};
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let text = patchbay_fuzz::text(data);
    let path = Path::new("/fuzz/mcp.json");
    match parse(&text, path) {
        Ok(items) => {
            for item in items {
                match item {
                    CatalogItem::Server(entry) => {
                        let _ = entry.credential_key(&|name| Some(name.to_lowercase()));
                        let _ = entry.credential_key(&|_| None);
                        let _ = entry.display_title();
                    }
                    CatalogItem::Invalid(invalid) => {
                        // Errors are shown to the user: they must render.
                        let _ = invalid.error.to_string();
                    }
                }
            }
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
});
