//! Client ID Metadata Documents (the MCP authorization spec's second way to a client, after a
//! pre-registered one and before dynamic registration): where the authorization server says
//! `client_id_metadata_document_supported`, Patchbay's client id is the https URL of a document
//! describing it (`catalog/client-metadata.json`, published at
//! [`DEFAULT_CLIENT_METADATA_URL`]). The server fetches that document itself; Patchbay only
//! sends its URL.
//!
//! Where the URL comes from decides how far it is trusted: one the user set
//! (`PATCHBAY_CLIENT_METADATA_URL`) is used as given; the default is used only once Patchbay has
//! read the document there and found it names itself and lists the flow's redirect URI, so a
//! document that is not (or no longer) published never strands a user on a server's error page
//! when dynamic registration would have worked.

use serde_json::Value;

use crate::http::Http;
use crate::OAuthError;

/// Where Patchbay's client metadata document is published.
pub const DEFAULT_CLIENT_METADATA_URL: &str = "https://patchbay.dev/oauth/client-metadata.json";
/// The environment variable that sets another URL (`off` turns the document off).
pub const CLIENT_METADATA_URL_ENV: &str = "PATCHBAY_CLIENT_METADATA_URL";

/// Which client metadata document Patchbay offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientMetadataUrl {
    /// Set by the user: used as given.
    Configured(String),
    /// The published default (or a test's stand-in): used once read back and found to match.
    Published(String),
    /// No document: dynamic registration or a configured client only.
    Off,
}

impl Default for ClientMetadataUrl {
    fn default() -> Self {
        ClientMetadataUrl::Published(DEFAULT_CLIENT_METADATA_URL.to_string())
    }
}

impl ClientMetadataUrl {
    /// From [`CLIENT_METADATA_URL_ENV`]: unset or empty is the default, `off` none, an https URL
    /// with a path that URL. Anything else is an error naming the variable.
    pub fn from_env() -> Result<ClientMetadataUrl, OAuthError> {
        Self::parse_setting(std::env::var(CLIENT_METADATA_URL_ENV).ok().as_deref())
    }

    pub fn parse_setting(value: Option<&str>) -> Result<ClientMetadataUrl, OAuthError> {
        let value = value.map(str::trim).unwrap_or_default();
        if value.is_empty() {
            return Ok(ClientMetadataUrl::default());
        }
        if value.eq_ignore_ascii_case("off") {
            return Ok(ClientMetadataUrl::Off);
        }
        let bad = |message: &str| OAuthError::BadUrl {
            url: value.to_string(),
            message: format!("{CLIENT_METADATA_URL_ENV}: {message}"),
        };
        let url = url::Url::parse(value).map_err(|e| bad(&e.to_string()))?;
        // The draft: an https URL with a path component, no fragment.
        if url.scheme() != "https" || url.host().is_none() {
            return Err(bad("a client id metadata document is served over https"));
        }
        if url.path() == "/" || url.fragment().is_some() {
            return Err(bad("the URL needs a path and no fragment"));
        }
        Ok(ClientMetadataUrl::Configured(value.to_string()))
    }

    /// The client id to use with a server that supports metadata documents, for a flow that
    /// redirects to `redirect_uri`; `None` to go on to dynamic registration.
    pub async fn client_id(&self, http: &Http, redirect_uri: &str) -> Option<String> {
        match self {
            ClientMetadataUrl::Off => None,
            ClientMetadataUrl::Configured(url) => Some(url.clone()),
            ClientMetadataUrl::Published(url) => match published_document(http, url).await {
                Ok(document) if describes(&document, url, redirect_uri) => Some(url.clone()),
                Ok(_) => {
                    tracing::warn!(
                        url = url.as_str(),
                        redirect_uri,
                        "the client metadata document does not name itself or list this redirect; registering instead"
                    );
                    None
                }
                Err(e) => {
                    tracing::info!(url = url.as_str(), error = %e, "the client metadata document could not be read; registering instead");
                    None
                }
            },
        }
    }
}

async fn published_document(http: &Http, url: &str) -> Result<Value, OAuthError> {
    let answer = http.get(url).await?;
    if !answer.status.is_success() {
        return Err(crate::discovery::status_error(&answer));
    }
    answer.json()
}

/// Whether `document`, read at `url`, is a client metadata document for a flow redirecting to
/// `redirect_uri`: its `client_id` is exactly its URL (the draft's rule) and it lists the redirect.
pub fn describes(document: &Value, url: &str, redirect_uri: &str) -> bool {
    document.get("client_id").and_then(Value::as_str) == Some(url)
        && document
            .get("redirect_uris")
            .and_then(Value::as_array)
            .is_some_and(|uris| uris.iter().any(|u| u.as_str() == Some(redirect_uri)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The document in the repository is the one the default URL promises.
    fn repository_document() -> Value {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../../catalog/client-metadata.json"
        );
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    #[test]
    fn the_repository_document_describes_the_default_client_and_its_receiver() {
        let document = repository_document();
        let receiver = crate::flow::receiver_redirect_uri(crate::flow::DEFAULT_PORT);
        assert!(describes(&document, DEFAULT_CLIENT_METADATA_URL, &receiver));
        assert_eq!(document["token_endpoint_auth_method"], "none");
        assert_eq!(
            document["grant_types"],
            serde_json::json!(["authorization_code", "refresh_token"])
        );
        assert!(!describes(
            &document,
            "https://elsewhere.example/client.json",
            &receiver
        ));
        assert!(!describes(
            &document,
            DEFAULT_CLIENT_METADATA_URL,
            "http://127.0.0.1:9999/callback"
        ));
    }

    #[test]
    fn the_setting_is_the_default_off_or_an_https_url_with_a_path() {
        assert_eq!(
            ClientMetadataUrl::parse_setting(None).unwrap(),
            ClientMetadataUrl::default()
        );
        assert_eq!(
            ClientMetadataUrl::parse_setting(Some(" ")).unwrap(),
            ClientMetadataUrl::default()
        );
        assert_eq!(
            ClientMetadataUrl::parse_setting(Some("OFF")).unwrap(),
            ClientMetadataUrl::Off
        );
        assert_eq!(
            ClientMetadataUrl::parse_setting(Some("https://me.example/pb.json")).unwrap(),
            ClientMetadataUrl::Configured("https://me.example/pb.json".into())
        );
        for bad in [
            "http://me.example/pb.json",
            "https://me.example/",
            "https://me.example/pb.json#x",
            "pb.json",
        ] {
            let e = ClientMetadataUrl::parse_setting(Some(bad)).unwrap_err();
            assert!(e.to_string().contains(CLIENT_METADATA_URL_ENV), "{e}");
        }
    }
}
