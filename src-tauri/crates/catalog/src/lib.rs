//! The MCP server catalog: the shipped default merged with the user's, in the AIR `mcp.json` format.
//!
//! This crate owns reading catalog files in either form, AIR's flat map or the `mcpServers`
//! wrapper (`document`), validating and merging them (`load`), the `${VAR}` placeholder language
//! (`placeholder`), the rules that classify an entry (static credential headers, OAuth capability,
//! the `unavailable` declaration) and Claude Code's credential-key function (`credential_key`).
//! It does no I/O beyond reading the catalog files it is given and knows nothing of secrets' values.
//! `own_gateway` is the one rule telling whether a URL is Patchbay's own gateway (never a
//! connector). Text it hands out (names, titles, errors) never carries raw control characters (`text`).

pub mod credential_key;
pub mod document;
pub mod entry;
pub mod error;
pub mod headers;
pub mod load;
pub mod own_gateway;
pub mod placeholder;
pub mod text;
pub mod url_key;

pub use credential_key::{credential_key, CredentialKey};
pub use document::{
    form_of, parse_document, read_catalog_file, server_map_mut, servers, CatalogForm, UTF8_BOM,
};
pub use entry::{
    normalize_unavailable, OAuthConfig, RetryPolicy, ServerEntry, ServerName, Transport,
    RETRY_BASE_MS_RANGE, RETRY_JITTER_RANGE, RETRY_MAX_LIMIT, TIMEOUT_MS_RANGE,
    UNAVAILABLE_MAX_CHARS,
};
pub use error::{CatalogError, EntryError};
pub use headers::is_credential_header;
pub use load::{
    load, parse, Catalog, CatalogItem, CatalogSource, InvalidEntry, SourceKind, SourceReport,
    BUILT_IN_PATH,
};
pub use placeholder::{
    expand, is_variable_name, placeholders, MalformedPlaceholder, Placeholder, VariableUse,
};
pub use url_key::{same_url, url_key};

/// The JSON schema every catalog file is validated against (AIR's schema plus Patchbay's extensions).
pub const SCHEMA: &str = include_str!("../../../../catalog/mcp.schema.json");

/// The catalog Patchbay ships, compiled in so the app works even where the file is not installed.
pub const DEFAULT_CATALOG: &str = include_str!("../../../../catalog/mcp.json");
