//! Client ID Metadata Documents at the gateway's authorization server (the MCP authorization
//! spec's way to a client after a pre-registered one, before dynamic registration): a client
//! whose `client_id` is an https URL is described by the JSON document at that URL, fetched
//! when its consent page opens, and needs no `/oauth/register`.
//!
//! The document must name itself (`client_id` equal to the URL), list its redirect URIs
//! (loopback, https or an app's own scheme: the registrations' rule) and be a public client's
//! (no secret; `token_endpoint_auth_method` `none` or absent). The fetch is bounded
//! ([`FETCH_TIMEOUT`], [`MAX_DOCUMENT_BYTES`], no redirects) and never goes to a private-network
//! or link-local address: any web page can open a consent URL on loopback, and the gateway must
//! not become its probe into the user's network. The consent page shows the document's name
//! with the host that vouches for it, so a name alone cannot pass for another client.

use super::registrations::{acceptable_redirect, Registration};
use crate::stdio::error_chain;
use serde_json::Value;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

/// How long fetching a document may take, from the name lookup to its last byte.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// The largest document read (the draft suggests servers limit it to 5 KiB).
pub const MAX_DOCUMENT_BYTES: usize = 5 * 1024;

/// Why a client's metadata document cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum DocumentError {
    /// The client id is no document URL this server fetches.
    #[error("its client id is not an https URL with a path, in normal form, without credentials or fragment")]
    NotADocumentUrl,
    /// Its host is (or resolves to) an address the gateway does not fetch from.
    #[error("{host} is a private-network or link-local address, where Patchbay fetches no client documents")]
    PrivateAddress { host: String },
    /// The fetch failed for a reason that may pass (the host down, a timeout): retryable.
    #[error("its metadata document could not be fetched ({why}); try again")]
    Unreachable { why: String },
    /// The server answered, but not with the document: terminal until the client fixes it.
    #[error("its metadata document URL answered HTTP {status}")]
    Status { status: u16 },
    #[error("its metadata document is larger than {MAX_DOCUMENT_BYTES} bytes")]
    TooLarge,
    #[error("its metadata document is not usable: {why}")]
    Invalid { why: String },
}

/// Whether `client_id` is to be taken as a metadata document's URL.
pub fn is_document_url(client_id: &str) -> bool {
    client_id.starts_with("https://")
}

/// The client that the document at `client_id` describes, fetched now.
pub async fn fetch(client_id: &str) -> Result<Registration, DocumentError> {
    match tokio::time::timeout(FETCH_TIMEOUT, fetch_unbounded(client_id)).await {
        Ok(result) => result,
        Err(_) => Err(DocumentError::Unreachable {
            why: format!("no answer within {} s", FETCH_TIMEOUT.as_secs()),
        }),
    }
}

async fn fetch_unbounded(client_id: &str) -> Result<Registration, DocumentError> {
    let url = document_url(client_id)?;
    let host = url.host_str().unwrap_or_default().to_owned();
    let port = url.port_or_known_default().unwrap_or(443);
    // Resolved once and checked, then pinned: a name cannot point elsewhere between the check
    // and the connection.
    let lookup = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host((lookup.as_str(), port))
        .await
        .map_err(|e| DocumentError::Unreachable {
            why: format!("{host} cannot be resolved: {e}"),
        })?
        .collect();
    if addrs.is_empty() || addrs.iter().any(|a| !fetchable(a.ip())) {
        return Err(DocumentError::PrivateAddress { host });
    }
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(FETCH_TIMEOUT)
        .timeout(FETCH_TIMEOUT)
        .resolve_to_addrs(&lookup, &addrs)
        .build()
        .map_err(|e| DocumentError::Unreachable { why: e.to_string() })?;
    let mut response = client
        .get(url.clone())
        .header(reqwest::header::ACCEPT, "application/json")
        .send()
        .await
        .map_err(|e| DocumentError::Unreachable {
            why: error_chain(&e),
        })?;
    if response.status() != reqwest::StatusCode::OK {
        return Err(DocumentError::Status {
            status: response.status().as_u16(),
        });
    }
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| DocumentError::Unreachable {
            why: error_chain(&e),
        })?
    {
        body.extend_from_slice(&chunk);
        if body.len() > MAX_DOCUMENT_BYTES {
            return Err(DocumentError::TooLarge);
        }
    }
    registration_from(client_id, &body, chrono::Utc::now())
}

/// `client_id` as the URL fetched: https, a host, a path other than `/`, no credentials, no
/// fragment, and exactly as written (a URL the parser rewrites, `/a/../b`, is not one).
fn document_url(client_id: &str) -> Result<url::Url, DocumentError> {
    let url = url::Url::parse(client_id).map_err(|_| DocumentError::NotADocumentUrl)?;
    let usable = url.scheme() == "https"
        && url.host().is_some()
        && url.path() != "/"
        && url.username().is_empty()
        && url.password().is_none()
        && url.fragment().is_none()
        && url.as_str() == client_id;
    usable.then_some(url).ok_or(DocumentError::NotADocumentUrl)
}

/// Loopback (the user's own programs) and public addresses; not private networks, link-local
/// (cloud metadata services live there), unspecified, broadcast or multicast ones.
fn fetchable(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            let shared = a == 100 && (64..128).contains(&b); // RFC 6598 carrier-grade NAT
            v4.is_loopback()
                || !(v4.is_private()
                    || v4.is_link_local()
                    || v4.is_unspecified()
                    || v4.is_broadcast()
                    || v4.is_multicast()
                    || shared
                    || a == 0)
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return fetchable(IpAddr::V4(v4));
            }
            let first = v6.segments()[0];
            let unique_local = first & 0xfe00 == 0xfc00;
            let link_local = first & 0xffc0 == 0xfe80;
            v6.is_loopback()
                || !(unique_local || link_local || v6.is_unspecified() || v6.is_multicast())
        }
    }
}

/// The registration a fetched document describes, checked.
fn registration_from(
    client_id: &str,
    body: &[u8],
    now: chrono::DateTime<chrono::Utc>,
) -> Result<Registration, DocumentError> {
    let invalid = |why: &str| DocumentError::Invalid { why: why.into() };
    let document: Value = serde_json::from_slice(body).map_err(|_| invalid("it is not JSON"))?;
    let Some(document) = document.as_object() else {
        return Err(invalid("it is not a JSON object"));
    };
    if document.get("client_id").and_then(Value::as_str) != Some(client_id) {
        return Err(invalid("its client_id is not its own URL"));
    }
    if document.contains_key("client_secret") {
        return Err(invalid("it carries a client_secret (a document is public)"));
    }
    match document
        .get("token_endpoint_auth_method")
        .and_then(Value::as_str)
    {
        None | Some("none") => {}
        Some(_) => {
            return Err(invalid(
                "its token_endpoint_auth_method is not \"none\" (the gateway takes public clients only)",
            ))
        }
    }
    let redirect_uris: Vec<String> = document
        .get("redirect_uris")
        .and_then(Value::as_array)
        .map(|uris| {
            uris.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    if redirect_uris.is_empty() {
        return Err(invalid("it lists no redirect_uris"));
    }
    if let Some(bad) = redirect_uris.iter().find(|u| !acceptable_redirect(u)) {
        return Err(DocumentError::Invalid {
            why: format!("its redirect URI {bad} is neither loopback, https nor an app's scheme"),
        });
    }
    let host = url::Url::parse(client_id)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned))
        .unwrap_or_default();
    let name: String = document
        .get("client_name")
        .and_then(Value::as_str)
        .map(|n| n.chars().filter(|c| !c.is_control()).take(100).collect())
        .unwrap_or_default();
    let client_name = match name.trim() {
        "" => host,
        name => format!("{name} ({host})"),
    };
    Ok(Registration {
        client_id: client_id.to_owned(),
        client_name,
        redirect_uris,
        created_at: now,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const URL: &str = "https://client.example/oauth/client.json";

    fn document(extra: Value) -> Vec<u8> {
        let mut doc = serde_json::json!({
            "client_id": URL, "client_name": "Example Agent",
            "redirect_uris": ["http://127.0.0.1:5000/callback"],
        });
        for (k, v) in extra.as_object().unwrap() {
            if v.is_null() {
                doc.as_object_mut().unwrap().remove(k);
            } else {
                doc[k] = v.clone();
            }
        }
        doc.to_string().into_bytes()
    }

    #[test]
    fn a_document_naming_itself_is_a_public_client_shown_with_its_host() {
        let got =
            registration_from(URL, &document(serde_json::json!({})), chrono::Utc::now()).unwrap();
        assert_eq!(got.client_id, URL);
        assert_eq!(got.client_name, "Example Agent (client.example)");
        assert_eq!(got.redirect_uris, ["http://127.0.0.1:5000/callback"]);
        let nameless = registration_from(
            URL,
            &document(serde_json::json!({ "client_name": null })),
            chrono::Utc::now(),
        )
        .unwrap();
        assert_eq!(nameless.client_name, "client.example");
    }

    #[test]
    fn a_document_is_refused_for_each_thing_it_gets_wrong() {
        let refused = |extra: Value, says: &str| {
            let err = registration_from(URL, &document(extra), chrono::Utc::now()).unwrap_err();
            assert!(err.to_string().contains(says), "{err}");
        };
        refused(
            serde_json::json!({ "client_id": "https://other.example/c.json" }),
            "not its own URL",
        );
        refused(serde_json::json!({ "client_secret": "s" }), "client_secret");
        refused(
            serde_json::json!({ "token_endpoint_auth_method": "client_secret_basic" }),
            "public clients only",
        );
        refused(
            serde_json::json!({ "redirect_uris": [] }),
            "no redirect_uris",
        );
        refused(
            serde_json::json!({ "redirect_uris": ["http://evil.example/cb"] }),
            "http://evil.example/cb",
        );
        refused(
            serde_json::json!({ "redirect_uris": ["javascript:alert(1)"] }),
            "javascript",
        );
        let err = registration_from(URL, b"[1]", chrono::Utc::now()).unwrap_err();
        assert!(err.to_string().contains("not a JSON object"), "{err}");
    }

    #[test]
    fn only_https_urls_with_a_path_as_written_are_fetched() {
        assert!(document_url(URL).is_ok());
        for bad in [
            "http://client.example/c.json",
            "https://client.example/",
            "https://client.example",
            "https://user:pw@client.example/c.json",
            "https://client.example/c.json#x",
            "https://client.example/a/../c.json",
            "https://CLIENT.example/c.json",
            "not a url",
        ] {
            assert!(document_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn private_and_link_local_addresses_are_not_fetched_loopback_and_public_are() {
        for ok in ["127.0.0.1", "::1", "93.184.216.34", "2606:4700::1111"] {
            assert!(fetchable(ok.parse().unwrap()), "{ok}");
        }
        for bad in [
            "10.0.0.1",
            "172.16.5.4",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "fd00::1",
            "fe80::1",
            "::ffff:192.168.1.1",
            "::",
            "224.0.0.1",
        ] {
            assert!(!fetchable(bad.parse().unwrap()), "{bad}");
        }
    }

    #[tokio::test]
    async fn a_private_address_is_refused_before_anything_is_sent() {
        let err = fetch("https://192.168.1.1/c.json").await.unwrap_err();
        assert!(matches!(err, DocumentError::PrivateAddress { .. }), "{err}");
        let err = fetch("https://[fe80::1]/c.json").await.unwrap_err();
        assert!(matches!(err, DocumentError::PrivateAddress { .. }), "{err}");
    }
}
