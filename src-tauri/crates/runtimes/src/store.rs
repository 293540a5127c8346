//! The seam every runtime store implements, so the reconciler and the writers do not care whether
//! a credential lives in Claude Code's JSON file, Codex's file, or an OS keychain item.

use chrono::{DateTime, Utc};
use patchbay_catalog::CredentialKey;
use patchbay_vault::Secret;
use std::path::PathBuf;

/// An agent runtime Patchbay bridges to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Runtime {
    ClaudeCode,
    Codex,
}

impl Runtime {
    pub fn display_name(self) -> &'static str {
        match self {
            Runtime::ClaudeCode => "Claude Code",
            Runtime::Codex => "Codex",
        }
    }
}

/// One MCP OAuth credential as a runtime stores it. Secrets stay wrapped.
#[derive(Debug, Clone)]
pub struct RuntimeCredential {
    pub key: CredentialKey,
    /// The runtime's own name for the server (it decides the key).
    pub server_name: String,
    pub server_url: String,
    pub access_token: Secret,
    pub refresh_token: Option<Secret>,
    pub expires_at: Option<DateTime<Utc>>,
    pub scope: Option<String>,
    pub client_id: Option<String>,
    pub client_secret: Option<Secret>,
    pub issuer: Option<String>,
}

/// What a write did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteOutcome {
    Written,
    /// The runtime's entry was kept: fresher (its access token still valid and later than
    /// ours), or a live pair issued to another OAuth client (`reconcile::is_foreign_live`).
    KeptFresher,
}

#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// Another writer held the lock past the timeout, or the keychain did not answer. Retryable.
    #[error("{what} is busy: {message}")]
    Busy { what: String, message: String },
    /// The store file is not what we expect; nothing was written. Terminal until a human looks.
    #[error("{path}: {message}")]
    Malformed { path: PathBuf, message: String },
    #[error("{path}: {message}")]
    Io { path: PathBuf, message: String },
}

/// A runtime's MCP credential store.
pub trait RuntimeStore: Send + Sync {
    fn runtime(&self) -> Runtime;
    /// Every MCP credential the runtime holds.
    fn read_all(&self) -> Result<Vec<RuntimeCredential>, RuntimeError>;
    fn read(&self, key: &CredentialKey) -> Result<Option<RuntimeCredential>, RuntimeError>;
    /// Write one entry, preserving everything else in the store, unless the stored entry is
    /// fresher at `now`.
    fn write(
        &self,
        credential: &RuntimeCredential,
        now: DateTime<Utc>,
    ) -> Result<WriteOutcome, RuntimeError>;
    /// Remove one entry (retiring a credential), preserving everything else. `Ok(false)` when absent.
    fn remove(&self, key: &CredentialKey) -> Result<bool, RuntimeError>;
    /// Forget the runtime's cached "needs auth" verdict for a server, if it keeps one.
    fn clear_needs_auth(&self, server_name: &str) -> Result<(), RuntimeError>;
    /// The directory to watch and the file names in it that matter (files are replaced by rename).
    fn watch_targets(&self) -> Vec<(PathBuf, Vec<String>)>;
}
