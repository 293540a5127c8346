//! Patchbay's own gateway as a URL: its default port and the one rule that tells whether a URL
//! reaches it. The client configs Patchbay reads (Cursor, Gemini CLI, ...) may list the gateway
//! itself (what `patchbay gateway client add --json` prints, pasted as a server): such an entry
//! is Patchbay, never a connector, or the aggregate `/mcp` would aggregate itself. The connector
//! listing (core), the gateway's upstreams and the client writers all ask this module.
//!
//! Only the host forms the gateway answers count (its Host gate accepts `127.0.0.1`, `localhost`
//! and `[::1]` and refuses others with 403, so another alias cannot loop), over `http` (it speaks
//! no TLS), on the path `/mcp` or `/mcp/NAME`, with or without a trailing `/`; a query or
//! fragment does not change where a request goes.

use std::net::{Ipv4Addr, Ipv6Addr};

/// The gateway's port unless told otherwise (the OAuth receiver has 3118).
pub const DEFAULT_GATEWAY_PORT: u16 = 3119;

/// Which of the gateway's endpoints a URL names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GatewayEndpoint {
    /// `/mcp`: every connector in use as one server.
    Aggregate,
    /// `/mcp/NAME`: one connector.
    Connector(String),
}

/// A URL of the gateway's shape, on whichever port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GatewayUrl {
    pub port: u16,
    pub endpoint: GatewayEndpoint,
}

/// Whether `host` is one of the loopback names the gateway (and Patchbay's receiver) answers:
/// `localhost`, `127.0.0.1`, `[::1]`.
pub fn is_loopback_host(host: Option<url::Host<&str>>) -> bool {
    matches!(
        host,
        Some(url::Host::Domain("localhost"))
            | Some(url::Host::Ipv4(Ipv4Addr::LOCALHOST))
            | Some(url::Host::Ipv6(Ipv6Addr::LOCALHOST))
    )
}

/// `url` as a gateway URL (any port): `http`, a loopback host the gateway answers, the path
/// `/mcp` or `/mcp/NAME` (a trailing `/` allowed). `None` for anything else.
pub fn gateway_url(url: &str) -> Option<GatewayUrl> {
    let url = url::Url::parse(url.trim()).ok()?;
    if url.scheme() != "http" {
        return None;
    }
    if !is_loopback_host(url.host()) {
        return None;
    }
    let port = url.port_or_known_default()?;
    let segments: Vec<&str> = url.path_segments()?.collect();
    let endpoint = match segments.as_slice() {
        ["mcp"] | ["mcp", ""] => GatewayEndpoint::Aggregate,
        ["mcp", name] | ["mcp", name, ""] if !name.is_empty() => {
            GatewayEndpoint::Connector((*name).to_owned())
        }
        _ => return None,
    };
    Some(GatewayUrl { port, endpoint })
}

/// Whether `url` reaches Patchbay's own gateway listening on one of `ports` (see the module).
pub fn is_own_gateway_url(url: &str, ports: &[u16]) -> bool {
    gateway_url(url).is_some_and(|g| ports.contains(&g.port))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PORTS: &[u16] = &[DEFAULT_GATEWAY_PORT];

    #[test]
    fn every_loopback_form_of_the_gateway_is_its_own() {
        for own in [
            "http://127.0.0.1:3119/mcp",
            "http://localhost:3119/mcp",
            "http://LOCALHOST:3119/mcp",
            "http://[::1]:3119/mcp",
            "http://127.0.0.1:3119/mcp/",
            "http://localhost:3119/mcp/github",
            "http://[::1]:3119/mcp/github/",
            "  http://127.0.0.1:3119/mcp  ",
            "http://127.0.0.1:3119/mcp?x=1",
            "http://127.0.0.1:3119/mcp#top",
            // The WHATWG parser's other spellings of 127.0.0.1 and a dot segment.
            "http://127.1:3119/mcp",
            "http://127.0.0.1:3119/x/../mcp",
        ] {
            assert!(is_own_gateway_url(own, PORTS), "{own}");
        }
    }

    #[test]
    fn other_ports_paths_hosts_and_schemes_are_not() {
        for other in [
            "http://127.0.0.1:3118/mcp",
            "http://127.0.0.1/mcp",
            "http://127.0.0.1:3119/",
            "http://127.0.0.1:3119/mcp2",
            "http://127.0.0.1:3119/api/mcp",
            "http://127.0.0.1:3119/mcp/github/message",
            "http://127.0.0.1:3119/mcp/a/b",
            "https://127.0.0.1:3119/mcp",
            "http://127.0.0.2:3119/mcp",
            "http://0.0.0.0:3119/mcp",
            "http://localhost.evil.example:3119/mcp",
            "http://example.com:3119/mcp",
            "127.0.0.1:3119/mcp",
            "not a url",
        ] {
            assert!(!is_own_gateway_url(other, PORTS), "{other}");
        }
    }

    #[test]
    fn the_port_counts_only_when_the_gateway_serves_it() {
        assert!(!is_own_gateway_url("http://127.0.0.1:4000/mcp", PORTS));
        assert!(is_own_gateway_url(
            "http://127.0.0.1:4000/mcp",
            &[DEFAULT_GATEWAY_PORT, 4000]
        ));
    }

    #[test]
    fn the_endpoint_is_named() {
        let at = |url: &str| gateway_url(url).map(|g| (g.port, g.endpoint));
        assert_eq!(
            at("http://localhost:4000/mcp/"),
            Some((4000, GatewayEndpoint::Aggregate))
        );
        assert_eq!(
            at("http://[::1]:3119/mcp/notion/"),
            Some((3119, GatewayEndpoint::Connector("notion".into())))
        );
        assert_eq!(at("http://localhost:3119/mcp//"), None);
    }
}
