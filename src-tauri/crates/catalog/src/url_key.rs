//! When two server URLs name the same endpoint: the one rule every caller uses (matching a
//! client's server to a catalog entry, `switch`, `connect URL`, the gateway's own lookups, an
//! imported token's server). Parsed as a URL (`url::Url`): scheme and host case and a default
//! port do not count, nor a fragment, nor one trailing `/` at the end of the path; the query
//! does. Text that does not parse as a URL is compared trimmed, one trailing `/` forgiven.

/// `url` in the form two URLs of one endpoint share.
pub fn url_key(url: &str) -> String {
    let trimmed = url.trim();
    match url::Url::parse(trimmed) {
        Ok(mut parsed) => {
            parsed.set_fragment(None);
            let path = parsed.path().to_owned();
            if path.len() > 1 && path.ends_with('/') {
                parsed.set_path(&path[..path.len() - 1]);
            }
            let key = parsed.to_string();
            // `http://host` and `http://host/` alike: the root's own `/` goes too.
            match (parsed.path(), parsed.query()) {
                ("/", None) => key.trim_end_matches('/').to_owned(),
                _ => key,
            }
        }
        Err(_) => trimmed.strip_suffix('/').unwrap_or(trimmed).to_owned(),
    }
}

/// `a` and `b` name the same endpoint (see the module doc); an empty URL matches nothing.
pub fn same_url(a: &str, b: &str) -> bool {
    !a.trim().is_empty() && url_key(a) == url_key(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_endpoint_many_spellings() {
        let same = [
            ("https://mcp.linear.app/mcp", "HTTPS://MCP.Linear.App/mcp"),
            (
                "https://mcp.linear.app/mcp",
                "https://mcp.linear.app:443/mcp",
            ),
            ("http://localhost/mcp", "http://localhost:80/mcp"),
            ("https://mcp.linear.app/mcp", "https://mcp.linear.app/mcp/"),
            (
                "https://mcp.linear.app/mcp",
                " https://mcp.linear.app/mcp#x ",
            ),
            ("https://mcp.linear.app", "https://mcp.linear.app/"),
            ("https://x.example/mcp?a=1", "https://x.example/mcp/?a=1"),
            ("not a url/", "not a url"),
        ];
        for (a, b) in same {
            assert!(
                same_url(a, b),
                "{a} vs {b}: {} / {}",
                url_key(a),
                url_key(b)
            );
        }
        let different = [
            ("https://mcp.linear.app/mcp", "http://mcp.linear.app/mcp"),
            (
                "https://mcp.linear.app/mcp",
                "https://mcp.linear.app:8443/mcp",
            ),
            ("https://mcp.linear.app/mcp", "https://mcp.linear.app/MCP"),
            ("https://x.example/mcp?a=1", "https://x.example/mcp?a=2"),
            ("https://x.example/mcp?a=1", "https://x.example/mcp"),
            ("https://x.example/mcp", "https://x.example/mcp//"),
            ("", ""),
        ];
        for (a, b) in different {
            assert!(!same_url(a, b), "{a} vs {b}: {}", url_key(a));
        }
    }
}
