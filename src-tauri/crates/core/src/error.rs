//! Core errors: what went wrong and where, never a secret value.

#[derive(Debug, thiserror::Error)]
pub enum CoreError {
    #[error("cannot find a home directory to keep Patchbay's data in; set PATCHBAY_DATA_DIR or pass --data-dir")]
    NoHome,
    #[error(transparent)]
    Vault(#[from] patchbay_vault::VaultError),
    #[error("{0}")]
    Invalid(String),
    /// The connector cannot be authorized (not in the catalog, not an OAuth server, missing
    /// configuration).
    #[error("{0}")]
    NotAuthorizable(String),
    /// Text the user typed or pasted is not what was asked for.
    #[error("{0}")]
    InvalidInput(String),
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
    /// The connection check's health database (health.sqlite).
    #[error(transparent)]
    Health(#[from] patchbay_check::HealthError),
    /// Writing a checked transport back to a catalog file failed; the file is unchanged.
    #[error("cannot write {path}: {message}")]
    CatalogWrite {
        path: std::path::PathBuf,
        message: String,
    },
}

impl CoreError {
    /// A stable machine-readable kind, for the window's `{ kind, message }` errors: `no_home`,
    /// `secret_store`, `invalid`, `not_authorizable`, `invalid_input`, `oauth`, `timed_out`,
    /// `watch`, `health_store`, `catalog_write`.
    pub fn kind(&self) -> &'static str {
        match self {
            CoreError::NoHome => "no_home",
            CoreError::Vault(_) => "secret_store",
            CoreError::Invalid(_) => "invalid",
            CoreError::NotAuthorizable(_) => "not_authorizable",
            CoreError::InvalidInput(_) => "invalid_input",
            CoreError::OAuth(_) => "oauth",
            CoreError::WaitTimedOut { .. } => "timed_out",
            CoreError::Watch { .. } => "watch",
            CoreError::Health(_) => "health_store",
            CoreError::CatalogWrite { .. } => "catalog_write",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_stable() {
        assert_eq!(CoreError::NoHome.kind(), "no_home");
        assert_eq!(CoreError::Invalid("x".into()).kind(), "invalid");
        let e = CoreError::NotAuthorizable("stdio cannot be authorized".into());
        assert_eq!(
            (e.kind(), e.to_string().as_str()),
            ("not_authorizable", "stdio cannot be authorized")
        );
        assert_eq!(CoreError::InvalidInput("x".into()).kind(), "invalid_input");
        assert_eq!(
            CoreError::from(patchbay_oauth::OAuthError::UnknownState).kind(),
            "oauth"
        );
        let timed_out = CoreError::WaitTimedOut {
            connector: "n".into(),
            after: std::time::Duration::from_secs(1),
        };
        assert_eq!(timed_out.kind(), "timed_out");
    }
}
