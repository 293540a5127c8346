//! The OAuth flow's errors. Retryable ones (the server could not be reached) are apart from
//! terminal ones (a 4xx, `invalid_grant`, bad metadata). No variant carries a token, a client
//! secret, a verifier or an authorization code: messages name URLs, fields and causes only.

use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum OAuthError {
    // ---- Retryable: nothing reached the server, or it failed on its side. ----
    #[error("could not connect to {url}: {message}")]
    Connect { url: String, message: String },
    #[error("{url} answered {status}: the server failed; try again later")]
    ServerError { url: String, status: u16 },

    // ---- Terminal. ----
    /// The server took the request and did not answer in time.
    #[error("{url} accepted the request but did not answer within {}s", .after.as_secs())]
    Timeout { url: String, after: Duration },
    #[error("request to {url} failed: {message}")]
    Http { url: String, message: String },
    #[error("{url} answered {status}{}", .detail.as_ref().map(|d| format!(": {d}")).unwrap_or_default())]
    Status {
        url: String,
        status: u16,
        detail: Option<String>,
    },
    #[error("{url} redirected to another origin ({location}); discovery only follows redirects within the same origin")]
    CrossOriginRedirect { url: String, location: String },
    #[error("the answer from {url} is larger than {limit} bytes")]
    TooLarge { url: String, limit: usize },
    #[error("{url} did not answer with the expected JSON document: {message}")]
    BadDocument { url: String, message: String },
    #[error("invalid URL {url:?}: {message}")]
    BadUrl { url: String, message: String },
    #[error("no protected-resource metadata for {resource}: tried {}", .tried.join(", "))]
    NoResourceMetadata {
        resource: String,
        tried: Vec<String>,
    },
    /// RFC 9728 §3.3: the document is for another resource; its data must not be used (a hostile
    /// server could otherwise have the user consent to a token another resource receives).
    #[error("the protected-resource metadata at {metadata_url} is for {}, not for {server_url}; Patchbay will not authorize with it (RFC 9728 §3.3)", .resource.as_deref().map(|r| format!("{r:?}")).unwrap_or_else(|| "no resource (it has no \"resource\" member)".into()))]
    ResourceMismatch {
        metadata_url: String,
        resource: Option<String>,
        server_url: String,
    },
    #[error("no usable authorization-server metadata for issuer {issuer}: {}", .tried.join("; "))]
    NoServerMetadata { issuer: String, tried: Vec<String> },
    #[error("the authorization server {issuer} does not list S256 in code_challenge_methods_supported; Patchbay requires PKCE with S256 and will not authorize without it")]
    NoS256 { issuer: String },
    #[error("{server}: the authorization server {issuer} offers no way to register Patchbay (no client metadata documents, no dynamic registration); enter a client id when `patchbay authorize {server}` asks for one in a terminal, or add a clientId for \"{server}\" to the catalog's oauth block or to {clients_file}")]
    NoClient {
        server: String,
        issuer: String,
        /// The redirect URI the client must be registered with.
        redirect_uri: String,
        clients_file: String,
    },
    #[error("{path}: {field}: {message}")]
    ClientsFile {
        path: String,
        field: String,
        message: String,
    },
    #[error("{field} uses ${{{name}}}, which is neither stored in the vault nor set in the environment; store it with `patchbay secret set {name}`")]
    MissingVariable { field: String, name: String },
    #[error("dynamic client registration at {url} failed: {message}")]
    Registration { url: String, message: String },
    /// An OAuth error response (RFC 6749 §5.2) from the token endpoint.
    #[error("the token endpoint refused the code: {error}{}", .description.as_ref().map(|d| format!(" ({d})")).unwrap_or_default())]
    Token {
        error: String,
        description: Option<String>,
    },
    #[error("the authorization server {issuer} no longer knows Patchbay's registration (invalid_client); it was dropped, authorize again to register anew")]
    RegistrationForgotten { issuer: String },
    #[error("the token response has no access_token")]
    NoAccessToken,

    // ---- The callback (receiver or paste-back). ----
    #[error("the provider refused the authorization: {error}{}", .description.as_ref().map(|d| format!(" ({d})")).unwrap_or_default())]
    Denied {
        error: String,
        description: Option<String>,
    },
    #[error("this callback does not belong to a pending authorization (unknown, expired or already used state); start the authorization again")]
    UnknownState,
    #[error(
        "the callback has no state parameter; paste the full address the browser was redirected to"
    )]
    MissingState,
    #[error("the callback carries no authorization code")]
    MissingCode,
    #[error("the authorization server {issuer} promises an iss parameter on its redirect (RFC 9207), and this one has none; not using it")]
    MissingIss { issuer: String },
    #[error(
        "the redirect's iss {got:?} is not the expected issuer {issuer:?} (RFC 9207); not using it"
    )]
    WrongIss { issuer: String, got: String },

    #[error(transparent)]
    Vault(#[from] patchbay_vault::VaultError),
}

impl OAuthError {
    /// True when the same call may succeed later without anyone changing anything.
    pub fn is_retryable(&self) -> bool {
        match self {
            OAuthError::Connect { .. } | OAuthError::ServerError { .. } => true,
            OAuthError::Vault(e) => e.is_retryable(),
            _ => false,
        }
    }
}
