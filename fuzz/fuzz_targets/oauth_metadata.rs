//! Protected-resource (RFC 9728) and authorization-server (RFC 8414 / OpenID) metadata
//! documents, and the well-known URLs built from what they name.
#![no_main]

use libfuzzer_sys::fuzz_target;
use patchbay_oauth::discovery::{
    parse_resource_metadata, parse_server_metadata, resource_metadata_urls, server_metadata_urls,
};
use serde_json::Value;

const URL: &str = "https://auth.example/.well-known/oauth-authorization-server";

fuzz_target!(|data: &[u8]| {
    let Ok(doc) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let resource = parse_resource_metadata(
        "https://mcp.example/.well-known/oauth-protected-resource",
        &doc,
    );
    for issuer in &resource.authorization_servers {
        let _ = server_metadata_urls(issuer);
    }
    if let Some(r) = &resource.resource {
        let _ = resource_metadata_urls(r);
    }
    if let Ok(meta) = parse_server_metadata(URL, &doc, None) {
        let _ = meta.supports_s256();
        // The document's own issuer is accepted when it is the expected one, too.
        assert!(parse_server_metadata(URL, &doc, Some(&meta.issuer)).is_ok());
        let _ = server_metadata_urls(&meta.issuer);
    }
    let _ = parse_server_metadata(URL, &doc, Some("https://auth.example"));
});
