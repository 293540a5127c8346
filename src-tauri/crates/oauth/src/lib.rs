//! Patchbay's OAuth client for MCP servers (the MCP authorization spec, client side; see
//! shared/reference/mcp-authorization-client.md): discovery (`discovery`), client resolution and
//! dynamic registration (`client`), Client ID Metadata Documents (`cimd`), the authorization request with PKCE, state, resource and
//! scopes (`flow`), the token exchange (`token`), the refresh grant and its failure classes
//! (`refresh`), the loopback receiver on 127.0.0.1 and ::1
//! (`receiver`), paste-back parsing (`pasteback`) and the system browser (`browser`).
//! It knows nothing of Tauri; the core's `Authorizer` drives it for the CLI and the tray.
//!
//! Every outbound request goes through [`http::Http`]: 30 s bound, same-origin redirects only,
//! 1 MiB cap. Secrets (tokens, client secrets, verifiers) travel as `patchbay_vault::Secret` or
//! oauth2's secret types, whose Debug is redacted; errors never carry them.

pub mod browser;
pub mod cimd;
pub mod client;
pub mod discovery;
pub mod error;
pub mod flow;
pub mod http;
pub mod pasteback;
pub mod proc_net;
pub mod receiver;
pub mod refresh;
pub mod token;

pub use cimd::{ClientMetadataUrl, CLIENT_METADATA_URL_ENV, DEFAULT_CLIENT_METADATA_URL};
pub use client::{load_clients_file, PreRegistered, CLIENTS_FILE};
pub use error::OAuthError;
pub use flow::{begin, Begun, Completion, FlowRequest, StepUp, DEFAULT_PORT, FLOW_TTL};
pub use http::Http;
pub use patchbay_vault::ClientAuthMethod;
pub use refresh::{
    correction_for, refresh_corrected, refresh_once, revoke, Correction, RefreshClass,
    RefreshFailure, RefreshRequest, Renewed, RetryAfter, Revocation, RevokeClient,
};
pub use token::{complete, Completed, TokenResponse};
