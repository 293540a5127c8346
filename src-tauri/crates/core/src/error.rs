//! Core errors: what went wrong and where, never a secret value.

#[derive(Debug, thiserror::Error)]
pub enum CoreError {
    #[error("cannot find a home directory to keep Patchbay's data in; set PATCHBAY_DATA_DIR or pass --data-dir")]
    NoHome,
    #[error(transparent)]
    Vault(#[from] patchbay_vault::VaultError),
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    OAuth(#[from] patchbay_oauth::OAuthError),
    #[error("no authorization of {connector} completed within {} seconds", .after.as_secs())]
    WaitTimedOut {
        connector: String,
        after: std::time::Duration,
    },
    #[error("cannot watch {path}: {message}")]
    Watch {
        path: std::path::PathBuf,
        message: String,
    },
}
