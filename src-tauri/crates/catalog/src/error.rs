//! Errors that name the file, the entry, the field and what is wrong.
//!
//! Keys, names and messages inside these errors have their control characters escaped
//! (see [`crate::text::escape_controls`]) before they are stored, so printing one is safe.

use std::path::PathBuf;

/// A whole catalog file could not be used.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CatalogError {
    /// A file named explicitly (or the shipped one) does not exist.
    #[error("{path}: no such file")]
    Missing { path: PathBuf },
    /// A FIFO, socket, device or directory: refused before opening, since a FIFO would block.
    #[error("{path}: is {kind}, not a regular file; a catalog must be a JSON file")]
    NotAFile { path: PathBuf, kind: String },
    #[error("{path}: cannot read the catalog: {message}")]
    Read { path: PathBuf, message: String },
    #[error("{path}:{line}:{column}: not valid JSON: {message}")]
    Json {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    /// The same key twice in one object; JSON parsers keep only one, so one would vanish.
    #[error(
        "{path}:{line}:{column}: {} \"{key}\" appears twice{} (first at {first_line}:{first_column}); remove or rename one",
        if *server_name { "server name" } else { "key" },
        if *server_name || within.is_empty() { String::new() } else { format!(" in `{within}`") },
    )]
    Duplicate {
        path: PathBuf,
        key: String,
        /// JSON pointer of the object holding both, `` for the top level.
        within: String,
        /// True when the object is the server map.
        server_name: bool,
        first_line: usize,
        first_column: usize,
        line: usize,
        column: usize,
    },
    /// Server entries both inside `mcpServers` and beside it.
    #[error(
        "{path}: has both the `mcpServers` wrapper and server entries beside it ({}); use one form: move them into `mcpServers`, or drop the wrapper and list every server at the top level",
        names.join(", ")
    )]
    BothForms { path: PathBuf, names: Vec<String> },
    /// Valid JSON but not a catalog (wrong top-level type, `mcpServers` not an object, ...).
    #[error("{path}: field `{pointer}`: {message}")]
    Shape {
        path: PathBuf,
        pointer: String,
        message: String,
    },
}

/// One entry is wrong; the rest of its file still loads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: entry \"{entry}\", field `{field}`: {message}")]
pub struct EntryError {
    pub file: PathBuf,
    pub entry: String,
    /// A JSON pointer within the entry, e.g. `/headers/Authorization`, or `/` for the entry itself.
    pub field: String,
    pub message: String,
}
