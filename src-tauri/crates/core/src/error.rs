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
    /// A stable machine-readable kind, for the window's `{ kind, message }` errors.
    pub fn kind(&self) -> ErrorKind {
        match self {
            CoreError::NoHome => ErrorKind::NoHome,
            CoreError::Vault(_) => ErrorKind::SecretStore,
            CoreError::Invalid(_) => ErrorKind::Invalid,
            CoreError::NotAuthorizable(_) => ErrorKind::NotAuthorizable,
            CoreError::InvalidInput(_) => ErrorKind::InvalidInput,
            CoreError::OAuth(_) => ErrorKind::Oauth,
            CoreError::WaitTimedOut { .. } => ErrorKind::TimedOut,
            CoreError::Watch { .. } => ErrorKind::Watch,
            CoreError::Health(_) => ErrorKind::HealthStore,
            CoreError::CatalogWrite { .. } => ErrorKind::CatalogWrite,
        }
    }
}

/// What kind of error a command of the Connectors window failed with (the `kind` of
/// [`IpcError`]), serialized as its snake_case id. The window may branch on it (`conflict`
/// offers Replace); the message is for people.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    NoHome,
    SecretStore,
    Invalid,
    NotAuthorizable,
    InvalidInput,
    Oauth,
    TimedOut,
    Watch,
    HealthStore,
    CatalogWrite,
    /// A client's config already has a foreign entry of that name (the gateway's Add to).
    Conflict,
    /// The gateway's client registry could not be read or written.
    GatewayClients,
}

impl ErrorKind {
    /// The snake_case id, as serialized.
    pub fn id(self) -> &'static str {
        match self {
            ErrorKind::NoHome => "no_home",
            ErrorKind::SecretStore => "secret_store",
            ErrorKind::Invalid => "invalid",
            ErrorKind::NotAuthorizable => "not_authorizable",
            ErrorKind::InvalidInput => "invalid_input",
            ErrorKind::Oauth => "oauth",
            ErrorKind::TimedOut => "timed_out",
            ErrorKind::Watch => "watch",
            ErrorKind::HealthStore => "health_store",
            ErrorKind::CatalogWrite => "catalog_write",
            ErrorKind::Conflict => "conflict",
            ErrorKind::GatewayClients => "gateway_clients",
        }
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id())
    }
}

/// Compares with the snake_case id, so callers and tests can say `kind() == "no_home"`.
impl PartialEq<&str> for ErrorKind {
    fn eq(&self, other: &&str) -> bool {
        self.id() == *other
    }
}

/// What the Connectors window receives from a failed command: `{ "kind", "message" }`, an
/// English sentence and never a secret value.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct IpcError {
    pub kind: ErrorKind,
    /// An English sentence for the user.
    pub message: String,
}

impl From<CoreError> for IpcError {
    fn from(error: CoreError) -> IpcError {
        IpcError {
            kind: error.kind(),
            message: error.to_string(),
        }
    }
}

impl std::fmt::Display for IpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.kind, self.message)
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
            (ErrorKind::NotAuthorizable, "stdio cannot be authorized")
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

    #[test]
    fn every_kind_serializes_as_its_id_and_the_ipc_error_as_kind_and_message() {
        for kind in [
            ErrorKind::NoHome,
            ErrorKind::SecretStore,
            ErrorKind::Invalid,
            ErrorKind::NotAuthorizable,
            ErrorKind::InvalidInput,
            ErrorKind::Oauth,
            ErrorKind::TimedOut,
            ErrorKind::Watch,
            ErrorKind::HealthStore,
            ErrorKind::CatalogWrite,
            ErrorKind::Conflict,
            ErrorKind::GatewayClients,
        ] {
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.id());
        }
        let e = IpcError::from(CoreError::NotAuthorizable("x cannot be authorized".into()));
        assert_eq!(
            serde_json::to_value(&e).unwrap(),
            serde_json::json!({ "kind": "not_authorizable", "message": "x cannot be authorized" })
        );
    }
}
