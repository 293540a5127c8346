//! Errors that name the file, the entry, the field and what is wrong.

use std::path::PathBuf;

/// A whole catalog file could not be used.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CatalogError {
    #[error("{path}: cannot read the catalog: {message}")]
    Read { path: PathBuf, message: String },
    #[error("{path}:{line}:{column}: not valid JSON: {message}")]
    Json {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    /// Valid JSON but not a catalog (no `mcpServers` object, wrong top-level type, ...).
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
