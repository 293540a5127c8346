//! The MCP server catalog: the shipped default merged with the user's, in the AIR `mcp.json` format.
//!
//! This crate owns parsing and validating catalog files (`load`), the `${VAR}` placeholder language
//! (`placeholder`), the rules that classify an entry (static credential headers, OAuth capability,
//! the `unavailable` declaration) and Claude Code's credential-key function (`credential_key`).
//! It does no I/O beyond reading the catalog files it is given and knows nothing of secrets' values.

pub mod credential_key;
pub mod entry;
pub mod error;
pub mod headers;
pub mod load;
pub mod placeholder;

pub use credential_key::{credential_key, CredentialKey};
pub use entry::{
    normalize_unavailable, OAuthConfig, ServerEntry, ServerName, Transport, UNAVAILABLE_MAX_CHARS,
};
pub use error::{CatalogError, EntryError};
pub use headers::is_credential_header;
pub use load::{
    load, parse, Catalog, CatalogItem, CatalogSource, InvalidEntry, SourceKind, SourceReport,
    BUILT_IN_PATH,
};
pub use placeholder::{expand, placeholders, Placeholder, VariableUse};

/// The JSON schema every catalog file is validated against (AIR's schema plus Patchbay's extensions).
pub const SCHEMA: &str = include_str!("../../../../catalog/mcp.schema.json");

/// The catalog Patchbay ships, compiled in so the app works even where the file is not installed.
pub const DEFAULT_CATALOG: &str = include_str!("../../../../catalog/mcp.json");
